import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> F.hardswish.
    Input (batch_size, 256, 512), output (batch_size, 16, 254).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = F.hardswish(x)
        return x


batch_size = 5168
padding = 0
stride = 2
kernel_size = 5
out_channels = 16
in_channels = 256


def get_inputs():
    return [torch.randn(batch_size, 256, 512)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
