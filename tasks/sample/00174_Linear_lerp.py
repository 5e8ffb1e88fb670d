import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> torch.lerp.
    Input (batch_size, 2048), output (batch_size, 512).
    """

    def __init__(self, out_features, in_features, weight):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.weight = weight

    def forward(self, x):
        x = self.linear(x)
        x = torch.lerp(x, torch.tanh(x), self.weight)
        return x


batch_size = 129280
out_features = 512
in_features = 2048
weight = 0.25


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [out_features, in_features, weight]
