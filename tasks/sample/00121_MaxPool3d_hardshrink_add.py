import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.MaxPool3d -> F.hardshrink -> operator.add(parameter).
    Input (batch_size, 3, 4, 16, 16), output (batch_size, 3, 2, 8, 8).
    """

    def __init__(self, pool_kernel_size, lambd, bias_shape):
        super(Model, self).__init__()
        self.max_pool = nn.MaxPool3d(kernel_size=pool_kernel_size)
        self.lambd = lambd
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        x = self.max_pool(x)
        x = F.hardshrink(x, lambd=self.lambd)
        x = x + self.bias
        return x


batch_size = 349520
pool_kernel_size = 2
lambd = 0.5
bias_shape = (3, 1, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, 3, 4, 16, 16)]


def get_init_inputs():
    return [pool_kernel_size, lambd, bias_shape]
