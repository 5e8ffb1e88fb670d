import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.std.
    Input (batch_size, 32, 256, 256), output (batch_size, 1, 128, 128).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.std(x, dim=1, keepdim=True)
        return x


batch_size = 336
padding = 1
stride = 2
kernel_size = 3
out_channels = 128
in_channels = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 256, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
