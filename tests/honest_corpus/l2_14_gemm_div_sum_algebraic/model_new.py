import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """sum(x @ W^T / 2, dim=1) * s computed as (x . colsum(W)) / 2 * s."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        batch, in_features = x.shape
        hidden = self.weight.shape[0]
        wsum = torch.empty(in_features, dtype=x.dtype, device=x.device)
        out = torch.empty(batch, 1, dtype=x.dtype, device=x.device)
        kernels.gemm_div_sum_scale(x, self.weight, wsum, out, batch, in_features, hidden, self.scaling_factor)
        return out
