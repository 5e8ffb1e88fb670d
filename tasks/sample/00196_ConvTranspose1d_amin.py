import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose1d -> torch.amin.
    Input (batch_size, 32, 128), output (batch_size, 16, 1).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.amin(x, dim=2, keepdim=True)
        return x


batch_size = 262144
padding = 0
stride = 1
kernel_size = 2
out_channels = 16
in_channels = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
