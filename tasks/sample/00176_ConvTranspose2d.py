import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d.
    Input (batch_size, 16, 32, 32), output (batch_size, 32, 64, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        return x


batch_size = 8192
padding = 0
stride = 2
kernel_size = 2
out_channels = 32
in_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
