import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.logsigmoid -> F.glu.
    Input (batch_size, 16, 256, 64), output (batch_size, 8, 256, 64).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = F.logsigmoid(x)
        x = F.glu(x, dim=1)
        return x


batch_size = 4096


def get_inputs():
    return [torch.randn(batch_size, 16, 256, 64)]


def get_init_inputs():
    return []
