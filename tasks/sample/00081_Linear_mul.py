import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> operator.mul.
    Input (batch_size, 2048), output (batch_size, 1024).
    """

    def __init__(self, out_features, in_features, scale_factor):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.linear(x)
        x = x * self.scale_factor
        return x


batch_size = 80352
out_features = 1024
in_features = 2048
scale_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [out_features, in_features, scale_factor]
