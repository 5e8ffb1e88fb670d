import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.pow -> torch.abs -> torch.transpose -> F.hardsigmoid -> nn.AdaptiveAvgPool1d.
    Input (batch_size, 32, 1024), output (batch_size, 1024, 4).
    """

    def __init__(self, exponent, output_size):
        super(Model, self).__init__()
        self.exponent = exponent
        self.adaptive_pool = nn.AdaptiveAvgPool1d(output_size)

    def forward(self, x):
        x = torch.pow(x, self.exponent)
        x = torch.abs(x)
        x = torch.transpose(x, 1, 2).contiguous()
        x = F.hardsigmoid(x)
        x = self.adaptive_pool(x)
        return x


batch_size = 5904
exponent = 3
output_size = 4


def get_inputs():
    return [torch.randn(batch_size, 32, 1024)]


def get_init_inputs():
    return [exponent, output_size]
