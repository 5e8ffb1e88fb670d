import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(2 * x) on 16M floats (DESIGN.md section 4's example)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(2 * x)


def get_inputs():
    return [torch.randn(16 * 1024 * 1024)]


def get_init_inputs():
    return []
