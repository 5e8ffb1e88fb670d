import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose1d -> torch.flip.
    Input (batch_size, 512, 256), output (batch_size, 32, 257).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.flip(x, dims=[2])
        return x


batch_size = 5264
padding = 0
stride = 1
kernel_size = 2
out_channels = 32
in_channels = 512


def get_inputs():
    return [torch.randn(batch_size, 512, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
