import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.cat -> nn.PixelShuffle -> nn.AvgPool2d.
    Input (batch_size, 32, 128, 128), output (batch_size, 8, 170, 85).
    """

    def __init__(self, pool_kernel_size):
        super(Model, self).__init__()
        self.pixel_shuffle = nn.PixelShuffle(2)
        self.avg_pool = nn.AvgPool2d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = torch.cat([x, torch.relu(x)], dim=2)
        x = self.pixel_shuffle(x)
        x = self.avg_pool(x)
        return x


batch_size = 1024
pool_kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, 32, 128, 128)]


def get_init_inputs():
    return [pool_kernel_size]
