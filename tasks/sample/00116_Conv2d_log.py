import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> torch.log.
    Input (batch_size, 16, 256, 256), output (batch_size, 64, 256, 256).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, log_eps):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.log_eps = log_eps

    def forward(self, x):
        x = self.conv(x)
        x = torch.log(torch.abs(x) + self.log_eps)
        return x


batch_size = 256
padding = 0
stride = 1
kernel_size = 1
out_channels = 64
in_channels = 16
log_eps = 1e-06


def get_inputs():
    return [torch.randn(batch_size, 16, 256, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, log_eps]
