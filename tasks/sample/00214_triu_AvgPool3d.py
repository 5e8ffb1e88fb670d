import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.triu -> nn.AvgPool3d.
    Input (batch_size, 16, 16, 16, 16), output (batch_size, 16, 8, 8, 8).
    """

    def __init__(self, pool_kernel_size):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool3d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = torch.triu(x, diagonal=1)
        x = self.avg_pool(x)
        return x


batch_size = 11824
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 16, 16)]


def get_init_inputs():
    return [pool_kernel_size]
