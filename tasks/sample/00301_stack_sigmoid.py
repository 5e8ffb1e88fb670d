import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.stack -> torch.sigmoid.
    Input (batch_size, 64, 32, 32), output (batch_size, 2, 64, 32, 32).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.stack([x, torch.sigmoid(x)], dim=1)
        x = torch.sigmoid(x)
        return x


batch_size = 8192


def get_inputs():
    return [torch.randn(batch_size, 64, 32, 32)]


def get_init_inputs():
    return []
