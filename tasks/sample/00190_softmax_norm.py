import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.softmax -> torch.norm.
    Input (batch_size, 4096), output (batch_size).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.softmax(x, dim=1)
        x = torch.norm(x, p=2, dim=1, keepdim=False)
        return x


batch_size = 169312


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return []
