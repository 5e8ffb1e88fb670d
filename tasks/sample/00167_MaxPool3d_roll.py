import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.MaxPool3d -> torch.roll.
    Input (batch_size, 16, 8, 64, 64), output (batch_size, 16, 4, 32, 32).
    """

    def __init__(self, pool_kernel_size):
        super(Model, self).__init__()
        self.max_pool = nn.MaxPool3d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = self.max_pool(x)
        x = torch.roll(x, shifts=1, dims=1)
        return x


batch_size = 2048
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 16, 8, 64, 64)]


def get_init_inputs():
    return [pool_kernel_size]
