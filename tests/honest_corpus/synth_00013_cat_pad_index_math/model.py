import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.cat -> F.pad.
    Input (batch_size, 16, 4, 64, 64), output (batch_size, 16, 4, 128, 70).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.cat([x, torch.relu(x)], dim=3)
        x = F.pad(x, (3, 3))
        return x


batch_size = 1504


def get_inputs():
    return [torch.randn(batch_size, 16, 4, 64, 64)]


def get_init_inputs():
    return []
