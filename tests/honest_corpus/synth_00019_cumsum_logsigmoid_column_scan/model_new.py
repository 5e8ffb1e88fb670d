import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cumsum(dim=1) then logsigmoid."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        b, s, c = x.shape
        y = torch.empty_like(x)
        kernels.cumsum_logsigmoid_launch(x, y, b, s, c)
        return y
