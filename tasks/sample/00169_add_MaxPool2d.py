import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.add(parameter) -> nn.MaxPool2d.
    Input (batch_size, 32, 64, 32), output (batch_size, 32, 32, 16).
    """

    def __init__(self, bias_shape, pool_kernel_size):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)
        self.max_pool = nn.MaxPool2d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = x + self.bias
        x = self.max_pool(x)
        return x


batch_size = 10656
bias_shape = (32, 1, 1)
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 32, 64, 32)]


def get_init_inputs():
    return [bias_shape, pool_kernel_size]
