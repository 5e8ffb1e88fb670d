import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.std -> F.softshrink.
    Input (batch_size, 256, 128), output (batch_size, 1, 128).
    """

    def __init__(self, lambd):
        super(Model, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        x = torch.std(x, dim=1, keepdim=True)
        x = F.softshrink(x, lambd=self.lambd)
        return x


batch_size = 32768
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 256, 128)]


def get_init_inputs():
    return [lambd]
