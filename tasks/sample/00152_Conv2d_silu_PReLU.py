import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> F.silu -> nn.PReLU.
    Input (batch_size, 16, 64, 64), output (batch_size, 128, 30, 30).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, num_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.prelu = nn.PReLU(num_parameters=num_channels)

    def forward(self, x):
        x = self.conv(x)
        x = F.silu(x)
        x = self.prelu(x)
        return x


batch_size = 3840
padding = 0
stride = 2
kernel_size = 5
out_channels = 128
in_channels = 16
num_channels = 128


def get_inputs():
    return [torch.randn(batch_size, 16, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, num_channels]
