import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> nn.GroupNorm.
    Input (batch_size, 8, 256, 256), output (batch_size, 8, 256, 256).
    """

    def __init__(self, num_features, num_channels, num_groups):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.group_norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = self.batch_norm(x)
        x = self.group_norm(x)
        return x


batch_size = 2048
num_features = 8
num_channels = 8
num_groups = 4


def get_inputs():
    return [torch.randn(batch_size, 8, 256, 256)]


def get_init_inputs():
    return [num_features, num_channels, num_groups]
