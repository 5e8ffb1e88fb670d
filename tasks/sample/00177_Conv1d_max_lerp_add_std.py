import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv1d -> torch.max -> torch.lerp -> torch.add -> torch.std.
    Input (batch_size, 16, 128), output (batch_size, 1).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, weight):
        super(Model, self).__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.weight = weight

    def forward(self, x, y):
        x = self.conv(x)
        x = torch.max(x, dim=1, keepdim=True)[0]
        x = torch.lerp(x, torch.tanh(x), self.weight)
        x = torch.add(x, y)
        x = torch.std(x, dim=2, keepdim=False)
        return x


batch_size = 524288
padding = 0
stride = 1
kernel_size = 3
out_channels = 16
in_channels = 16
weight = 0.5


def get_inputs():
    return [torch.randn(batch_size, 16, 128), torch.randn(batch_size, 1, 126)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, weight]
