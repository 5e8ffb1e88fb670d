import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.tanhshrink -> nn.ConvTranspose1d -> torch.roll.
    Input (batch_size, 512, 128), output (batch_size, 64, 255).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = F.tanhshrink(x)
        x = self.conv_transpose(x)
        x = torch.roll(x, shifts=1, dims=2)
        return x


batch_size = 10352
padding = 1
stride = 2
kernel_size = 3
out_channels = 64
in_channels = 512


def get_inputs():
    return [torch.randn(batch_size, 512, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
