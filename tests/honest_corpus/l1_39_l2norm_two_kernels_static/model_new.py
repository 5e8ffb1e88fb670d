import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """x / ||x||_2 over dim 1."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        rows, cols = x.shape
        norms = torch.empty(rows, dtype=x.dtype, device=x.device)
        y = torch.empty_like(x)
        kernels.l2_norm_launch(x, norms, y, rows, cols)
        return y
