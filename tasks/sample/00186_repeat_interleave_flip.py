import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.repeat_interleave -> torch.flip.
    Input (batch_size, 16, 64, 16), output (batch_size, 16, 128, 16).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.repeat_interleave(x, 2, dim=2)
        x = torch.flip(x, dims=[1])
        return x


batch_size = 18656


def get_inputs():
    return [torch.randn(batch_size, 16, 64, 16)]


def get_init_inputs():
    return []
