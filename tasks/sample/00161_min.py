import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.min.
    Input (batch_size, 8, 8, 32, 32), output (batch_size, 8, 32, 32).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.min(x, dim=1, keepdim=False)[0]
        return x


batch_size = 16384


def get_inputs():
    return [torch.randn(batch_size, 8, 8, 32, 32)]


def get_init_inputs():
    return []
