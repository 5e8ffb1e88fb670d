import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.gemm.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        scratch = torch.empty(1, dtype=torch.int32, device=x.device)
        kernels.gemm_add_relu(x, self.gemm.weight, self.bias, y, scratch, batch, in_features,
                              out_features)
        return y
