import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> nn.LocalResponseNorm.
    Input (batch_size, 16, 1024), output (batch_size, 16, 1022).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, lrn_size):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.lrn = nn.LocalResponseNorm(lrn_size)

    def forward(self, x):
        x = self.conv(x)
        x = self.lrn(x)
        return x


batch_size = 17568
padding = 0
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 16
lrn_size = 5


def get_inputs():
    return [torch.randn(batch_size, 16, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, lrn_size]
