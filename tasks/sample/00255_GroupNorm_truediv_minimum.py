import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.GroupNorm -> operator.truediv -> torch.minimum.
    Input (batch_size, 16, 16, 64, 64), output (batch_size, 16, 16, 64, 64).
    """

    def __init__(self, num_channels, num_groups, divisor):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)
        self.divisor = divisor

    def forward(self, x, y):
        x = self.group_norm(x)
        x = x / self.divisor
        x = torch.minimum(x, y)
        return x


batch_size = 1024
num_channels = 16
num_groups = 8
divisor = 0.5


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 64, 64), torch.randn(batch_size, 16, 16, 64, 64)]


def get_init_inputs():
    return [num_channels, num_groups, divisor]
