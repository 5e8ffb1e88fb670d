import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.neg -> F.logsigmoid.
    Input (batch_size, 3, 128, 128), output (batch_size, 3, 128, 128).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.neg(x)
        x = F.logsigmoid(x)
        return x


batch_size = 21840


def get_inputs():
    return [torch.randn(batch_size, 3, 128, 128)]


def get_init_inputs():
    return []
