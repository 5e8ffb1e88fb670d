import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> F.hardswish.
    Input (batch_size, 512, 1024), output (batch_size, 512, 64).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.bmm(x, y)
        x = F.hardswish(x)
        return x


batch_size = 2048


def get_inputs():
    return [torch.randn(batch_size, 512, 1024), torch.randn(batch_size, 1024, 64)]


def get_init_inputs():
    return []
