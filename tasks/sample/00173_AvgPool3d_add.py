import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.AvgPool3d -> operator.add(parameter).
    Input (batch_size, 8, 16, 32, 32), output (batch_size, 8, 8, 16, 16).
    """

    def __init__(self, pool_kernel_size, bias_shape):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool3d(kernel_size=pool_kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        x = self.avg_pool(x)
        x = x + self.bias
        return x


batch_size = 8192
pool_kernel_size = 2
bias_shape = (8, 1, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 32, 32)]


def get_init_inputs():
    return [pool_kernel_size, bias_shape]
