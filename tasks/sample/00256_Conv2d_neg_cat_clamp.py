import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.neg -> torch.cat -> torch.clamp.
    Input (batch_size, 3, 128, 128), output (batch_size, 128, 256, 128).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, clamp_bound):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.clamp_bound = clamp_bound

    def forward(self, x):
        x = self.conv(x)
        x = torch.neg(x)
        x = torch.cat([x, torch.relu(x)], dim=2)
        x = torch.clamp(x, min=-self.clamp_bound, max=self.clamp_bound)
        return x


batch_size = 128
padding = 0
stride = 1
kernel_size = 1
out_channels = 128
in_channels = 3
clamp_bound = 3.0


def get_inputs():
    return [torch.randn(batch_size, 3, 128, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, clamp_bound]
