import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.unsqueeze -> torch.index_select.
    Input (batch_size, 8, 64, 64), output (batch_size, 4, 64, 1, 64).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.unsqueeze(x, 3)
        x = torch.index_select(x, 1, torch.arange(0, 8, 2, device=x.device))
        return x


batch_size = 32768


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 64)]


def get_init_inputs():
    return []
