import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.sum -> torch.index_select -> nn.MaxPool1d -> torch.triu.
    Input (batch_size, 16, 256, 256), output (batch_size, 11, 128).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.max_pool = nn.MaxPool1d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.sum(x, dim=2, keepdim=False)
        x = torch.index_select(x, 1, torch.arange(0, 32, 3, device=x.device))
        x = self.max_pool(x)
        x = torch.triu(x, diagonal=1)
        return x


batch_size = 256
padding = 0
stride = 1
kernel_size = 1
out_channels = 32
in_channels = 16
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 16, 256, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size]
