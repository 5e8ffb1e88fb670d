import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.log_softmax -> torch.softmax.
    Input (batch_size, 16, 16, 32, 32), output (batch_size, 16, 16, 32, 32).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.log_softmax(x, dim=4)
        x = torch.softmax(x, dim=4)
        return x


batch_size = 2464


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 32, 32)]


def get_init_inputs():
    return []
