import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS FP32 GEMM (kernels/linear.cpp), then bias + ReLU fused in one pass
    (kernels/bias_relu.cu)."""

    def __init__(self, in_features, out_features, bias_shape):
        super(ModelNew, self).__init__()
        # Same names as Model (gemm.weight, bias) so load_state_dict copies the weights.
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.gemm.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_no_bias(x, self.gemm.weight, y, batch, in_features, out_features)
        kernels.bias_relu_inplace(y, self.bias, batch, out_features)
        return y
