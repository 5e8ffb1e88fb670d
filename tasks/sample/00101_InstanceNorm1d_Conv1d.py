import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.InstanceNorm1d -> nn.Conv1d.
    Input (batch_size, 16, 2048), output (batch_size, 32, 2046).
    """

    def __init__(self, num_features, padding, stride, kernel_size, out_channels, in_channels):
        super(Model, self).__init__()
        self.instance_norm = nn.InstanceNorm1d(num_features)
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.instance_norm(x)
        x = self.conv(x)
        return x


batch_size = 6256
num_features = 16
padding = 0
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 2048)]


def get_init_inputs():
    return [num_features, padding, stride, kernel_size, out_channels, in_channels]
