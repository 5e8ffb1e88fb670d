import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.cumsum -> F.logsigmoid.
    Input (batch_size, 64, 1024), output (batch_size, 64, 1024).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.cumsum(x, dim=1)
        x = F.logsigmoid(x)
        return x


batch_size = 16384


def get_inputs():
    return [torch.randn(batch_size, 64, 1024)]


def get_init_inputs():
    return []
