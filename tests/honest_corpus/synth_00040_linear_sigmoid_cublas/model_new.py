import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS GEMM + bias + sigmoid."""

    def __init__(self, out_features, in_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.linear.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_forward(x, self.linear.weight, y, batch, in_features, out_features)
        kernels.bias_sigmoid_launch(y, self.linear.bias, batch, out_features)
        return y
