import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> torch.unsqueeze.
    Input (batch_size, 16, 16, 16), output (batch_size, 1, 16, 16, 16).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.unsqueeze(x, 1)
        return x


batch_size = 183072
num_features = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 16)]


def get_init_inputs():
    return [num_features]
