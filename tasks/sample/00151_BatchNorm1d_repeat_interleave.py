import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> torch.repeat_interleave.
    Input (batch_size, 8192), output (batch_size, 16384).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.repeat_interleave(x, 2, dim=1)
        return x


batch_size = 50624
num_features = 8192


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [num_features]
