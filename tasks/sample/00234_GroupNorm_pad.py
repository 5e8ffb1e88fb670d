import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.GroupNorm -> F.pad.
    Input (batch_size, 16, 16, 16, 16), output (batch_size, 16, 16, 16, 20).
    """

    def __init__(self, num_channels, num_groups):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = self.group_norm(x)
        x = F.pad(x, (2, 2))
        return x


batch_size = 13104
num_channels = 16
num_groups = 8


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 16, 16)]


def get_init_inputs():
    return [num_channels, num_groups]
