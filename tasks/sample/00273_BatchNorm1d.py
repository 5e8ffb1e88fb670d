import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d.
    Input (batch_size, 512), output (batch_size, 512).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        return x


batch_size = 2097152
num_features = 512


def get_inputs():
    return [torch.randn(batch_size, 512)]


def get_init_inputs():
    return [num_features]
