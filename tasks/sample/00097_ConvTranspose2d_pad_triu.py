import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> F.pad -> torch.triu.
    Input (batch_size, 3, 16, 16), output (batch_size, 16, 34, 40).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = F.pad(x, (3, 3))
        x = torch.triu(x, diagonal=1)
        return x


batch_size = 26080
padding = 0
stride = 2
kernel_size = 4
out_channels = 16
in_channels = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 16)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
