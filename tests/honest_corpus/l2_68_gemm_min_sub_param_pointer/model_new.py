import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias, min with a learned constant, subtract it."""

    def __init__(self, in_features, out_features, constant):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.linear.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.linear.weight, y, batch, in_features, out_features)
        kernels.min_subtract(y, self.linear.bias, self.constant, batch, out_features)
        return y
