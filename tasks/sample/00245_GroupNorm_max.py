import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.GroupNorm -> torch.max.
    Input (batch_size, 32, 128), output (batch_size, 32).
    """

    def __init__(self, num_channels, num_groups):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = self.group_norm(x)
        x = torch.max(x, dim=2, keepdim=False)[0]
        return x


batch_size = 262144
num_channels = 32
num_groups = 4


def get_inputs():
    return [torch.randn(batch_size, 32, 128)]


def get_init_inputs():
    return [num_channels, num_groups]
