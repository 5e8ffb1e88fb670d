import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> torch.round.
    Input (batch_size, 3, 4, 16, 16), output (batch_size, 3, 4, 16, 16).
    """

    def __init__(self, num_features, round_scale):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)
        self.round_scale = round_scale

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.round(x * self.round_scale) / self.round_scale
        return x


batch_size = 349520
num_features = 3
round_scale = 4.0


def get_inputs():
    return [torch.randn(batch_size, 3, 4, 16, 16)]


def get_init_inputs():
    return [num_features, round_scale]
