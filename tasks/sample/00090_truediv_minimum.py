import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.truediv -> torch.minimum.
    Input (batch_size, 8, 16, 128), output (batch_size, 8, 16, 128).
    """

    def __init__(self, divisor):
        super(Model, self).__init__()
        self.divisor = divisor

    def forward(self, x, y):
        x = x / self.divisor
        x = torch.minimum(x, y)
        return x


batch_size = 65536
divisor = 2.0


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 128), torch.randn(batch_size, 8, 16, 128)]


def get_init_inputs():
    return [divisor]
