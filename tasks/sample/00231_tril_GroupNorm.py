import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.tril -> nn.GroupNorm.
    Input (batch_size, 64, 2048), output (batch_size, 64, 2048).
    """

    def __init__(self, num_channels, num_groups):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = torch.tril(x)
        x = self.group_norm(x)
        return x


batch_size = 8192
num_channels = 64
num_groups = 8


def get_inputs():
    return [torch.randn(batch_size, 64, 2048)]


def get_init_inputs():
    return [num_channels, num_groups]
