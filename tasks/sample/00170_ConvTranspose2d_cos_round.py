import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> torch.cos -> torch.round.
    Input (batch_size, 3, 64, 16), output (batch_size, 32, 66, 18).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, round_scale):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.round_scale = round_scale

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.cos(x)
        x = torch.round(x * self.round_scale) / self.round_scale
        return x


batch_size = 28240
padding = 0
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 3
round_scale = 4.0


def get_inputs():
    return [torch.randn(batch_size, 3, 64, 16)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, round_scale]
