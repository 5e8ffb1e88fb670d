import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outer, R, inner = x.shape
        out = torch.empty(outer, 1, inner, dtype=x.dtype, device=x.device)
        kernels.sum_cols_forward(x, out, outer, R, inner)
        return out
