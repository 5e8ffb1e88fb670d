import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """matmul(x, W) + b then softshrink."""

    def __init__(self, in_features, out_features, lambd):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.lambd = lambd

    def forward(self, x):
        b, s, k = x.shape
        n = self.weight.shape[1]
        y = torch.empty(b, s, n, dtype=x.dtype, device=x.device)
        kernels.matmul_bias_softshrink(x, self.weight, self.bias, y, b * s, k, n, self.lambd)
        return y
