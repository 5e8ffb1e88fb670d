import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias, Swish, divide, clamp, tanh, clamp."""

    def __init__(self, in_features, out_features, bias=True):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.gemm.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.gemm.weight, y, batch, in_features, out_features)
        kernels.swish_clamp_tanh(y, self.gemm.bias, batch, out_features)
        return y
