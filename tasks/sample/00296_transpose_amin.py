import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.transpose -> torch.amin.
    Input (batch_size, 8, 64, 64), output (batch_size, 8, 64).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.transpose(x, 2, 3).contiguous()
        x = torch.amin(x, dim=2, keepdim=False)
        return x


batch_size = 32768


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 64)]


def get_init_inputs():
    return []
