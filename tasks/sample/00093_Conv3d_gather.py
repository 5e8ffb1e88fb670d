import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> torch.gather.
    Input (batch_size, 8, 8, 16, 16), output (batch_size, 8, 6, 14, 14).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x, index):
        x = self.conv(x)
        x = torch.gather(x, 3, index)
        return x


batch_size = 14384
padding = 0
stride = 1
kernel_size = 3
out_channels = 8
in_channels = 8


def get_inputs():
    return [torch.randn(batch_size, 8, 8, 16, 16), torch.randint(0, 14, (batch_size, 8, 6, 14, 14))]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
