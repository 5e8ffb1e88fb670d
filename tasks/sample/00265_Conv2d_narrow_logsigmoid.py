import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.narrow -> F.logsigmoid.
    Input (batch_size, 64, 64, 64), output (batch_size, 64, 30, 15).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.narrow(x, 3, 1, 15)
        x = F.logsigmoid(x)
        return x


batch_size = 1744
padding = 0
stride = 2
kernel_size = 5
out_channels = 64
in_channels = 64


def get_inputs():
    return [torch.randn(batch_size, 64, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
