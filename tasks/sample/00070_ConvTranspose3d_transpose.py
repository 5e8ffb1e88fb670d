import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose3d -> torch.transpose.
    Input (batch_size, 3, 8, 64, 64), output (batch_size, 8, 126, 14, 126).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.transpose(x, 2, 3).contiguous()
        return x


batch_size = 352
padding = 1
stride = 2
kernel_size = 2
out_channels = 8
in_channels = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 8, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
