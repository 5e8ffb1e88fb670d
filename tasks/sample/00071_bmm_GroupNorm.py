import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> nn.GroupNorm.
    Input (batch_size, 512, 1024), output (batch_size, 512, 64).
    """

    def __init__(self, num_channels, num_groups):
        super(Model, self).__init__()
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x, y):
        x = torch.bmm(x, y)
        x = self.group_norm(x)
        return x


batch_size = 1360
num_channels = 512
num_groups = 8


def get_inputs():
    return [torch.randn(batch_size, 512, 1024), torch.randn(batch_size, 1024, 64)]


def get_init_inputs():
    return [num_channels, num_groups]
