import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.where.
    Input (batch_size, 8192), output (batch_size, 8192).
    """

    def __init__(self, negative_scale):
        super(Model, self).__init__()
        self.negative_scale = negative_scale

    def forward(self, x):
        x = torch.where(x > 0, x, x * self.negative_scale)
        return x


batch_size = 131072
negative_scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [negative_scale]
