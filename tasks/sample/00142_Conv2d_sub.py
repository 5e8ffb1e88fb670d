import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> operator.sub.
    Input (batch_size, 64, 64, 64), output (batch_size, 128, 32, 32).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, subtract_value):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.subtract_value = subtract_value

    def forward(self, x):
        x = self.conv(x)
        x = x - self.subtract_value
        return x


batch_size = 1152
padding = 1
stride = 2
kernel_size = 3
out_channels = 128
in_channels = 64
subtract_value = 0.5


def get_inputs():
    return [torch.randn(batch_size, 64, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, subtract_value]
