import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias, sigmoid, scaling and residual add."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.gemm.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.gemm.weight, y, batch, in_features, out_features)
        kernels.sigmoid_scale_residual(y, self.gemm.bias, batch, out_features, self.scaling_factor, 2)
        return y
