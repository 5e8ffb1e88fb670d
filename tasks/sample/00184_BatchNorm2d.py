import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d.
    Input (batch_size, 32, 32, 32), output (batch_size, 32, 32, 32).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        return x


batch_size = 25520
num_features = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 32, 32)]


def get_init_inputs():
    return [num_features]
