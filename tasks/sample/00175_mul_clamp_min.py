import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.mul(parameter) -> torch.clamp_min.
    Input (batch_size, 16, 256, 16), output (batch_size, 16, 256, 16).
    """

    def __init__(self, scale_shape, clamp_min):
        super(Model, self).__init__()
        self.scale = nn.Parameter(1.0 + torch.randn(scale_shape) * 0.02)
        self.clamp_min = clamp_min

    def forward(self, x):
        x = x * self.scale
        x = torch.clamp_min(x, self.clamp_min)
        return x


batch_size = 14736
scale_shape = (16, 1, 1)
clamp_min = 0.0


def get_inputs():
    return [torch.randn(batch_size, 16, 256, 16)]


def get_init_inputs():
    return [scale_shape, clamp_min]
