import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> F.hardtanh.
    Input (batch_size, 256, 2048), output (batch_size, 128, 1024).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, hardtanh_bound):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.hardtanh_bound = hardtanh_bound

    def forward(self, x):
        x = self.conv(x)
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        return x


batch_size = 1088
padding = 0
stride = 2
kernel_size = 1
out_channels = 128
in_channels = 256
hardtanh_bound = 2.0


def get_inputs():
    return [torch.randn(batch_size, 256, 2048)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, hardtanh_bound]
