import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> F.selu.
    Input (batch_size, 128, 256), output (batch_size, 64, 256).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = F.selu(x)
        return x


batch_size = 11584
padding = 2
stride = 1
kernel_size = 5
out_channels = 64
in_channels = 128


def get_inputs():
    return [torch.randn(batch_size, 128, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
