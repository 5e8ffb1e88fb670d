import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> F.hardshrink.
    Input (batch_size, 3, 16, 16, 16), output (batch_size, 16, 7, 7, 7).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, lambd):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.lambd = lambd

    def forward(self, x):
        x = self.conv(x)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 87376
padding = 0
stride = 2
kernel_size = 3
out_channels = 16
in_channels = 3
lambd = 0.25


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 16, 16)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, lambd]
