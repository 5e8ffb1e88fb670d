import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias, division and GELU."""

    def __init__(self, input_size, output_size, divisor):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.linear.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.linear.weight, y, batch, in_features, out_features)
        kernels.divide_gelu(y, self.linear.bias, batch, out_features, self.divisor)
        return y
