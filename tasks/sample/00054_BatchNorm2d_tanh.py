import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> torch.tanh.
    Input (batch_size, 64, 128, 64), output (batch_size, 64, 128, 64).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.tanh(x)
        return x


batch_size = 560
num_features = 64


def get_inputs():
    return [torch.randn(batch_size, 64, 128, 64)]


def get_init_inputs():
    return [num_features]
