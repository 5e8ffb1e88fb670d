import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> torch.repeat_interleave.
    Input (batch_size, 32, 1024), output (batch_size, 32, 1024).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.repeat_interleave(x, 2, dim=1)
        return x


batch_size = 32768
padding = 2
stride = 1
kernel_size = 5
out_channels = 16
in_channels = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 1024)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
