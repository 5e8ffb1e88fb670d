import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.sigmoid -> F.gelu -> torch.maximum.
    Input (batch_size, 3, 16, 16, 16), output (batch_size, 3, 16, 16, 16).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.sigmoid(x)
        x = F.gelu(x)
        x = torch.maximum(x, y)
        return x


batch_size = 87376


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 16, 16), torch.randn(batch_size, 3, 16, 16, 16)]


def get_init_inputs():
    return []
