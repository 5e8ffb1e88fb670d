import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> F.mish -> operator.truediv.
    Input (batch_size, 32, 64), output (batch_size, 16, 62).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, divisor):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.divisor = divisor

    def forward(self, x):
        x = self.conv(x)
        x = F.mish(x)
        x = x / self.divisor
        return x


batch_size = 449680
padding = 0
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 32
divisor = 0.5


def get_inputs():
    return [torch.randn(batch_size, 32, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, divisor]
