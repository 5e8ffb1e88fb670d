import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Sum over one dimension, keepdim, as a coalesced column walk (kernels/sum_reduce.cu)."""

    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        outer = 1
        for s in x.shape[:dim]:
            outer *= s
        inner = 1
        for s in x.shape[dim + 1:]:
            inner *= s
        out_shape = list(x.shape)
        out_shape[dim] = 1
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        kernels.sum_middle_axis_forward(x, out, outer, x.shape[dim], inner)
        return out
