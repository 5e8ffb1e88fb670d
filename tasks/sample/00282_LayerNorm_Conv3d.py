import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> nn.Conv3d.
    Input (batch_size, 3, 8, 32, 32), output (batch_size, 32, 8, 32, 32).
    """

    def __init__(self, normalized_shape, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.layer_norm(x)
        x = self.conv(x)
        return x


batch_size = 4096
normalized_shape = 32
padding = 1
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 8, 32, 32)]


def get_init_inputs():
    return [normalized_shape, padding, stride, kernel_size, out_channels, in_channels]
