import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.flip -> torch.argmax.
    Input (batch_size, 2048), output (batch_size).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.flip(x, dims=[1])
        x = torch.argmax(x, dim=1)
        return x


batch_size = 524288


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return []
