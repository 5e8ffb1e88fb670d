import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> torch.cos -> torch.cumsum.
    Input (batch_size, 3, 8, 32, 32), output (batch_size, 3, 8, 32, 32).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.cos(x)
        x = torch.cumsum(x, dim=2)
        return x


batch_size = 25040
num_features = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 8, 32, 32)]


def get_init_inputs():
    return [num_features]
