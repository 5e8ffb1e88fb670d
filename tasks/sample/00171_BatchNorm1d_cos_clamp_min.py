import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> torch.cos -> torch.clamp_min.
    Input (batch_size, 128, 1024), output (batch_size, 128, 1024).
    """

    def __init__(self, num_features, clamp_min):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)
        self.clamp_min = clamp_min

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.cos(x)
        x = torch.clamp_min(x, self.clamp_min)
        return x


batch_size = 4016
num_features = 128
clamp_min = 0.0


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [num_features, clamp_min]
