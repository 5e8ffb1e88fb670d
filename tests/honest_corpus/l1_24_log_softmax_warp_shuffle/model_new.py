import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Row log-softmax (dim=1)."""

    def __init__(self, dim: int = 1):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.log_softmax_launch(x, y, x.shape[0], x.shape[1])
        return y
