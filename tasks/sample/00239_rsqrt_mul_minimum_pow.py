import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.rsqrt -> operator.mul -> torch.minimum -> torch.pow.
    Input (batch_size, 8, 16, 16, 16), output (batch_size, 8, 16, 16, 16).
    """

    def __init__(self, rsqrt_eps, scale_factor, exponent):
        super(Model, self).__init__()
        self.rsqrt_eps = rsqrt_eps
        self.scale_factor = scale_factor
        self.exponent = exponent

    def forward(self, x, y):
        x = torch.rsqrt(torch.abs(x) + self.rsqrt_eps)
        x = x * self.scale_factor
        x = torch.minimum(x, y)
        x = torch.pow(x, self.exponent)
        return x


batch_size = 32768
rsqrt_eps = 1.0
scale_factor = 2.0
exponent = 2


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 16, 16), torch.randn(batch_size, 8, 16, 16, 16)]


def get_init_inputs():
    return [rsqrt_eps, scale_factor, exponent]
