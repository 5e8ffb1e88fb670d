import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.transpose.
    Input (batch_size, 3, 16, 128), output (batch_size, 8, 128, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.transpose(x, 1, 2).contiguous()
        return x


batch_size = 13840
padding = 2
stride = 2
kernel_size = 5
out_channels = 128
in_channels = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
