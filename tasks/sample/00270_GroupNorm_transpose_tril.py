import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.GroupNorm -> torch.transpose -> torch.tril.
    Input (batch_size, 8, 4, 64, 64), output (batch_size, 8, 4, 64, 64).
    """

    def __init__(self, num_channels, num_groups):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = self.group_norm(x)
        x = torch.transpose(x, 3, 4).contiguous()
        x = torch.tril(x)
        return x


batch_size = 8192
num_channels = 8
num_groups = 4


def get_inputs():
    return [torch.randn(batch_size, 8, 4, 64, 64)]


def get_init_inputs():
    return [num_channels, num_groups]
