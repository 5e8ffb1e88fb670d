import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.cat -> F.hardshrink.
    Input (batch_size, 3, 32, 128), output (batch_size, 3, 64, 128).
    """

    def __init__(self, lambd):
        super(Model, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        x = torch.cat([x, torch.relu(x)], dim=2)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 36800
lambd = 0.25


def get_inputs():
    return [torch.randn(batch_size, 3, 32, 128)]


def get_init_inputs():
    return [lambd]
