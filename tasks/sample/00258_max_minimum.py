import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.max -> torch.minimum.
    Input (batch_size, 64, 128), output (batch_size, 128).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.max(x, dim=1, keepdim=False)[0]
        x = torch.minimum(x, y)
        return x


batch_size = 131072


def get_inputs():
    return [torch.randn(batch_size, 64, 128), torch.randn(batch_size, 128)]


def get_init_inputs():
    return []
