import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LPPool2d -> torch.mean -> nn.ConvTranspose1d.
    Input (batch_size, 32, 256, 256), output (batch_size, 32, 127).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.lp_pool = nn.LPPool2d(2, kernel_size=2)
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.lp_pool(torch.abs(x) + 1e-06)
        x = torch.mean(x, dim=1, keepdim=False)
        x = self.conv_transpose(x)
        return x


batch_size = 512
padding = 1
stride = 1
kernel_size = 2
out_channels = 32
in_channels = 128


def get_inputs():
    return [torch.randn(batch_size, 32, 256, 256)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
