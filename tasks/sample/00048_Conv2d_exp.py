import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.exp.
    Input (batch_size, 8, 64, 64), output (batch_size, 128, 64, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, exp_clamp):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.exp_clamp = exp_clamp

    def forward(self, x):
        x = self.conv(x)
        x = torch.exp(torch.clamp(x, max=self.exp_clamp))
        return x


batch_size = 2048
padding = 0
stride = 1
kernel_size = 1
out_channels = 128
in_channels = 8
exp_clamp = 20.0


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, exp_clamp]
