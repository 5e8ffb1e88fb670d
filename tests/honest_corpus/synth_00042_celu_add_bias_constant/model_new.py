import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """celu then + bias."""

    def __init__(self, alpha, bias_shape):
        super(ModelNew, self).__init__()
        self.alpha = alpha
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.celu_add_launch(x, self.bias, y, x.numel(), x.shape[-1], float(self.alpha))
        return y
