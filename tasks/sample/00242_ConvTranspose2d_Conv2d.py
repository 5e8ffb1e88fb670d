import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> nn.Conv2d.
    Input (batch_size, 64, 32, 32), output (batch_size, 16, 62, 62).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, padding_2, stride_2, kernel_size_2, out_channels_2, in_channels_2):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.conv = nn.Conv2d(in_channels_2, out_channels_2, kernel_size_2, stride=stride_2, padding=padding_2)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.conv(x)
        return x


batch_size = 4352
padding = 1
stride = 2
kernel_size = 2
out_channels = 64
in_channels = 64
padding_2 = 0
stride_2 = 1
kernel_size_2 = 1
out_channels_2 = 16
in_channels_2 = 64


def get_inputs():
    return [torch.randn(batch_size, 64, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, padding_2, stride_2, kernel_size_2, out_channels_2, in_channels_2]
