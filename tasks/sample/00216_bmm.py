import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm.
    Input (batch_size, 256, 1024), output (batch_size, 256, 64).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.bmm(x, y)
        return x


batch_size = 4096


def get_inputs():
    return [torch.randn(batch_size, 256, 1024), torch.randn(batch_size, 1024, 64)]


def get_init_inputs():
    return []
