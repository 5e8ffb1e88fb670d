import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> torch.sum.
    Input (batch_size, 16384), output (batch_size).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.sum(x, dim=1, keepdim=False)
        return x


batch_size = 46880
num_features = 16384


def get_inputs():
    return [torch.randn(batch_size, 16384)]


def get_init_inputs():
    return [num_features]
