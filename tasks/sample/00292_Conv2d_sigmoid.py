import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.sigmoid.
    Input (batch_size, 3, 16, 16), output (batch_size, 16, 16, 16).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.sigmoid(x)
        return x


batch_size = 262144
padding = 1
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 16)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
