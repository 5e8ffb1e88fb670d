import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias, scaling and residual add."""

    def __init__(self, in_features, out_features, scaling_factor):
        super(ModelNew, self).__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.matmul.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.matmul.weight, y, batch, in_features, out_features)
        kernels.scale_residual(y, self.matmul.bias, batch, out_features, self.scaling_factor)
        return y
