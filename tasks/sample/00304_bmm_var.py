import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> torch.var.
    Input (batch_size, 256, 512), output (batch_size, 128).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.bmm(x, y)
        x = torch.var(x, dim=1, keepdim=False)
        return x


batch_size = 8192


def get_inputs():
    return [torch.randn(batch_size, 256, 512), torch.randn(batch_size, 512, 128)]


def get_init_inputs():
    return []
