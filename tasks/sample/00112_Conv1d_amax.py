import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> torch.amax.
    Input (batch_size, 64, 1024), output (batch_size, 16, 1).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.amax(x, dim=2, keepdim=True)
        return x


batch_size = 16384
padding = 2
stride = 2
kernel_size = 5
out_channels = 16
in_channels = 64


def get_inputs():
    return [torch.randn(batch_size, 64, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
