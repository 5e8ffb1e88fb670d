import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose3d -> torch.neg.
    Input (batch_size, 16, 16, 32, 32), output (batch_size, 32, 16, 32, 32).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.neg(x)
        return x


batch_size = 1616
padding = 1
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
