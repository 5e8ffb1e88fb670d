import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """x / mean(|x|, dim=1)."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.l1_norm_launch(x, y, x.shape[0], x.shape[1])
        return y
