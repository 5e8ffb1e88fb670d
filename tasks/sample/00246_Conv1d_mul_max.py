import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> operator.mul -> torch.max.
    Input (batch_size, 64, 1024), output (batch_size, 16).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, scale_factor):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.conv(x)
        x = x * self.scale_factor
        x = torch.max(x, dim=2, keepdim=False)[0]
        return x


batch_size = 16384
padding = 1
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 64
scale_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, 64, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, scale_factor]
