import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> torch.unsqueeze.
    Input (batch_size, 32, 2048), output (batch_size, 32, 1, 2048).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.unsqueeze(x, 2)
        return x


batch_size = 16384
num_features = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 2048)]


def get_init_inputs():
    return [num_features]
