import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> nn.AdaptiveAvgPool2d.
    Input (batch_size, 8, 64, 64), output (batch_size, 16, 1, 1).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, output_size):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.adaptive_pool = nn.AdaptiveAvgPool2d(output_size)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.adaptive_pool(x)
        return x


batch_size = 16896
padding = 1
stride = 1
kernel_size = 2
out_channels = 16
in_channels = 8
output_size = 1


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, output_size]
