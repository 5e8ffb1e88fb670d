import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose1d -> F.mish.
    Input (batch_size, 512, 256), output (batch_size, 64, 510).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = F.mish(x)
        return x


batch_size = 2240
padding = 1
stride = 2
kernel_size = 2
out_channels = 64
in_channels = 512


def get_inputs():
    return [torch.randn(batch_size, 512, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
