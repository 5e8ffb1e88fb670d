import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.roll -> torch.cumsum -> F.binary_cross_entropy_with_logits.
    Input (batch_size, 64, 128), output a scalar.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, target):
        x = torch.roll(x, shifts=1, dims=1)
        x = torch.cumsum(x, dim=1)
        x = F.binary_cross_entropy_with_logits(x, target)
        return x


batch_size = 128704


def get_inputs():
    return [torch.randn(batch_size, 64, 128), torch.rand(batch_size, 64, 128)]


def get_init_inputs():
    return []
