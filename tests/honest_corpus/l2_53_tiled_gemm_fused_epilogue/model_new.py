import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Tiled GEMM with bias, scaling, hardtanh and GELU fused into its store."""

    def __init__(self, in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.hardtanh_min = hardtanh_min
        self.hardtanh_max = hardtanh_max

    def forward(self, x):
        batch, k = x.shape
        n = self.gemm.weight.shape[0]
        y = torch.empty(batch, n, dtype=x.dtype, device=x.device)
        kernels.gemm_scale_hardtanh_gelu(x, self.gemm.weight, self.gemm.bias, y, batch, n, k,
                                         float(self.scaling_factor), float(self.hardtanh_min),
                                         float(self.hardtanh_max))
        return y
