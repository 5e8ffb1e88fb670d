import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose2d -> torch.max -> torch.add.
    Input (batch_size, 32, 64, 64), output (batch_size, 64, 66, 1).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x, y):
        x = self.conv_transpose(x)
        x = torch.max(x, dim=3, keepdim=True)[0]
        x = torch.add(x, y)
        return x


batch_size = 576
padding = 0
stride = 1
kernel_size = 3
out_channels = 64
in_channels = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 64, 64), torch.randn(batch_size, 64, 66, 1)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
