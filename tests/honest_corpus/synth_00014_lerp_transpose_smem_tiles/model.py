import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.lerp -> torch.transpose.
    Input (batch_size, 64, 256, 256), output (batch_size, 64, 256, 256).
    """

    def __init__(self, weight):
        super(Model, self).__init__()
        self.weight = weight

    def forward(self, x):
        x = torch.lerp(x, torch.tanh(x), self.weight)
        x = torch.transpose(x, 2, 3).contiguous()
        return x


batch_size = 256
weight = 0.5


def get_inputs():
    return [torch.randn(batch_size, 64, 256, 256)]


def get_init_inputs():
    return [weight]
