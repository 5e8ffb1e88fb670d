import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.glu -> operator.mul.
    Input (batch_size, 8, 8, 16, 16), output (batch_size, 4, 8, 16, 16).
    """

    def __init__(self, scale_factor):
        super(Model, self).__init__()
        self.scale_factor = scale_factor

    def forward(self, x):
        x = F.glu(x, dim=1)
        x = x * self.scale_factor
        return x


batch_size = 65536
scale_factor = 1.5


def get_inputs():
    return [torch.randn(batch_size, 8, 8, 16, 16)]


def get_init_inputs():
    return [scale_factor]
