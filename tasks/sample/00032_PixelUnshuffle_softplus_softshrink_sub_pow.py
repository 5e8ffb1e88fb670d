import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.PixelUnshuffle -> F.softplus -> F.softshrink -> operator.sub -> torch.pow.
    Input (batch_size, 8, 32, 32), output (batch_size, 32, 16, 16).
    """

    def __init__(self, beta, lambd, subtract_value, exponent):
        super(Model, self).__init__()
        self.pixel_unshuffle = nn.PixelUnshuffle(2)
        self.beta = beta
        self.lambd = lambd
        self.subtract_value = subtract_value
        self.exponent = exponent

    def forward(self, x):
        x = self.pixel_unshuffle(x)
        x = F.softplus(x, beta=self.beta)
        x = F.softshrink(x, lambd=self.lambd)
        x = x - self.subtract_value
        x = torch.pow(x, self.exponent)
        return x


batch_size = 107616
beta = 1.0
lambd = 0.5
subtract_value = 0.5
exponent = 2


def get_inputs():
    return [torch.randn(batch_size, 8, 32, 32)]


def get_init_inputs():
    return [beta, lambd, subtract_value, exponent]
