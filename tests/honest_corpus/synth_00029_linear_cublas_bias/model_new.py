import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """F.linear through cuBLAS + a bias kernel."""

    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.weight, y, batch, in_features, out_features)
        kernels.add_bias(y, self.bias, batch, out_features)
        return y
