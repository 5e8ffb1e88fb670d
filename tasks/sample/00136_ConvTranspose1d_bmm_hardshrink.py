import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose1d -> torch.bmm -> F.hardshrink.
    Input (batch_size, 16, 2048), output (batch_size, 64, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, lambd):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.lambd = lambd

    def forward(self, x, y):
        x = self.conv_transpose(x)
        x = torch.bmm(x, y)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 3264
padding = 1
stride = 1
kernel_size = 2
out_channels = 64
in_channels = 16
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 16, 2048), torch.randn(batch_size, 2047, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, lambd]
