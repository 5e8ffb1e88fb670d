import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cumsum over dim 1 of a 2-D input."""

    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.cumsum_launch(x, y, x.shape[0], x.shape[1])
        return y
