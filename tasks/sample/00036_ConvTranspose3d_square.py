import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose3d -> torch.square.
    Input (batch_size, 16, 8, 64, 64), output (batch_size, 16, 7, 63, 63).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.square(x)
        return x


batch_size = 640
padding = 1
stride = 1
kernel_size = 2
out_channels = 16
in_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 8, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
