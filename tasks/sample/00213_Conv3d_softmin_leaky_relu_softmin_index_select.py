import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> F.softmin -> F.leaky_relu -> F.softmin -> torch.index_select.
    Input (batch_size, 16, 8, 32, 32), output (batch_size, 8, 3, 5, 15).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, negative_slope):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.negative_slope = negative_slope

    def forward(self, x):
        x = self.conv(x)
        x = F.softmin(x, dim=2)
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = F.softmin(x, dim=3)
        x = torch.index_select(x, 3, torch.arange(0, 15, 3, device=x.device))
        return x


batch_size = 8192
padding = 0
stride = 2
kernel_size = 3
out_channels = 8
in_channels = 16
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, 16, 8, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, negative_slope]
