import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> torch.flip.
    Input (batch_size, 512, 2048), output (batch_size, 512, 256).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.bmm(x, y)
        x = torch.flip(x, dims=[1])
        return x


batch_size = 176


def get_inputs():
    return [torch.randn(batch_size, 512, 2048), torch.randn(batch_size, 2048, 256)]


def get_init_inputs():
    return []
