import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> nn.MaxPool2d.
    Input (batch_size, 8, 64, 64), output (batch_size, 32, 15, 15).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.max_pool = nn.MaxPool2d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = self.max_pool(x)
        return x


batch_size = 16816
padding = 0
stride = 2
kernel_size = 3
out_channels = 32
in_channels = 8
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size]
