import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.ConvTranspose1d -> F.hardshrink -> torch.where -> torch.log -> torch.transpose.
    Input (batch_size, 32, 64), output (batch_size, 129, 16).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, lambd, negative_scale, log_eps):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.lambd = lambd
        self.negative_scale = negative_scale
        self.log_eps = log_eps

    def forward(self, x):
        x = self.conv_transpose(x)
        x = F.hardshrink(x, lambd=self.lambd)
        x = torch.where(x > 0, x, x * self.negative_scale)
        x = torch.log(torch.abs(x) + self.log_eps)
        x = torch.transpose(x, 1, 2).contiguous()
        return x


batch_size = 62784
padding = 0
stride = 2
kernel_size = 3
out_channels = 16
in_channels = 32
lambd = 0.5
negative_scale = 0.5
log_eps = 1.0


def get_inputs():
    return [torch.randn(batch_size, 32, 64)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, lambd, negative_scale, log_eps]
