import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> nn.MaxPool1d -> torch.minimum -> nn.LocalResponseNorm.
    Input (batch_size, 128, 64), output (batch_size, 128, 21).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size, lrn_size):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.max_pool = nn.MaxPool1d(kernel_size=pool_kernel_size)
        self.lrn = nn.LocalResponseNorm(lrn_size)

    def forward(self, x, y):
        x = self.conv(x)
        x = self.max_pool(x)
        x = torch.minimum(x, y)
        x = self.lrn(x)
        return x


batch_size = 67808
padding = 0
stride = 1
kernel_size = 1
out_channels = 128
in_channels = 128
pool_kernel_size = 3
lrn_size = 2


def get_inputs():
    return [torch.randn(batch_size, 128, 64), torch.randn(batch_size, 128, 21)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, pool_kernel_size, lrn_size]
