import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> torch.relu.
    Input (batch_size, 32, 32, 32), output (batch_size, 64, 33, 33).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.relu(x)
        return x


batch_size = 1520
padding = 1
stride = 1
kernel_size = 4
out_channels = 64
in_channels = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
