import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> F.softshrink.
    Input (batch_size, 64, 1024), output (batch_size, 16, 510).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, lambd):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.lambd = lambd

    def forward(self, x):
        x = self.conv(x)
        x = F.softshrink(x, lambd=self.lambd)
        return x


batch_size = 16384
padding = 0
stride = 2
kernel_size = 5
out_channels = 16
in_channels = 64
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 64, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, lambd]
