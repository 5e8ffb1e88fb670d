import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cuBLAS FP32 GEMM (kernels/linear.cpp), then bias, GELU and row softmax fused in one
    kernel per row (kernels/bias_gelu_softmax.cu)."""

    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        # Same names as Model (linear.weight, linear.bias) so load_state_dict copies them.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.linear.weight.shape[0]
        y = torch.empty(batch, out_features, dtype=x.dtype, device=x.device)
        kernels.linear_no_bias(x, self.linear.weight, y, batch, in_features, out_features)
        kernels.bias_gelu_softmax_inplace(y, self.linear.bias, batch, out_features)
        return y
