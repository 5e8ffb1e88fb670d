import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> torch.flip.
    Input (batch_size, 64, 1024), output (batch_size, 128, 1022).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.flip(x, dims=[1])
        return x


batch_size = 4000
padding = 0
stride = 1
kernel_size = 3
out_channels = 128
in_channels = 64


def get_inputs():
    return [torch.randn(batch_size, 64, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
