import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.max -> F.hardshrink -> nn.PixelShuffle.
    Input (batch_size, 16, 8, 16, 16), output (batch_size, 4, 32, 32).
    """

    def __init__(self, lambd):
        super(Model, self).__init__()
        self.lambd = lambd
        self.pixel_shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        x = torch.max(x, dim=2, keepdim=False)[0]
        x = F.hardshrink(x, lambd=self.lambd)
        x = self.pixel_shuffle(x)
        return x


batch_size = 32768
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 16, 8, 16, 16)]


def get_init_inputs():
    return [lambd]
