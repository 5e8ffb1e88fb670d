import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.transpose -> F.softshrink.
    Input (batch_size, 256, 1024), output (batch_size, 1024, 256).
    """

    def __init__(self, lambd):
        super(Model, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        x = torch.transpose(x, 1, 2).contiguous()
        x = F.softshrink(x, lambd=self.lambd)
        return x


batch_size = 4096
lambd = 0.25


def get_inputs():
    return [torch.randn(batch_size, 256, 1024)]


def get_init_inputs():
    return [lambd]
