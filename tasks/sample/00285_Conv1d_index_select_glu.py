import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> torch.index_select -> F.glu.
    Input (batch_size, 512, 128), output (batch_size, 32, 62).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.conv(x)
        x = torch.index_select(x, 2, torch.arange(0, 124, 2, device=x.device))
        x = F.glu(x, dim=1)
        return x


batch_size = 5312
padding = 0
stride = 1
kernel_size = 5
out_channels = 64
in_channels = 512


def get_inputs():
    return [torch.randn(batch_size, 512, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels]
