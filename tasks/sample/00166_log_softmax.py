import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.log_softmax.
    Input (batch_size, 4096), output (batch_size, 4096).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.log_softmax(x, dim=1)
        return x


batch_size = 262144


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return []
