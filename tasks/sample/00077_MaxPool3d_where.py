import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.MaxPool3d -> torch.where.
    Input (batch_size, 16, 16, 16, 16), output (batch_size, 16, 8, 8, 8).
    """

    def __init__(self, pool_kernel_size, negative_scale):
        super(Model, self).__init__()
        self.max_pool = nn.MaxPool3d(kernel_size=pool_kernel_size)
        self.negative_scale = negative_scale

    def forward(self, x):
        x = self.max_pool(x)
        x = torch.where(x > 0, x, x * self.negative_scale)
        return x


batch_size = 16384
pool_kernel_size = 2
negative_scale = 0.1


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 16, 16)]


def get_init_inputs():
    return [pool_kernel_size, negative_scale]
