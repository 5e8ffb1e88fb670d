import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> torch.add -> torch.clamp_min -> torch.where.
    Input (batch_size, 8, 16, 64, 64), output (batch_size, 16, 14, 62, 62).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, clamp_min, negative_scale):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.clamp_min = clamp_min
        self.negative_scale = negative_scale

    def forward(self, x, y):
        x = self.conv(x)
        x = torch.add(x, y)
        x = torch.clamp_min(x, self.clamp_min)
        x = torch.where(x > 0, x, x * self.negative_scale)
        return x


batch_size = 112
padding = 0
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 8
clamp_min = -0.5
negative_scale = 0.1


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 64, 64), torch.randn(batch_size, 16, 14, 62, 62)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, clamp_min, negative_scale]
