import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> torch.logsumexp -> F.l1_loss.
    Input (batch_size, 16, 4, 32, 32), output a scalar.
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x, target):
        x = self.conv(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = F.l1_loss(x, target)
        return x


batch_size = 1136
padding = 1
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 4, 32, 32), torch.randn(batch_size, 1, 4, 32, 32)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
