import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> F.hardshrink.
    Input (batch_size, 256, 512), output (batch_size, 256, 512).
    """

    def __init__(self, normalized_shape, lambd):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.lambd = lambd

    def forward(self, x):
        x = self.layer_norm(x)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 3296
normalized_shape = 512
lambd = 0.25


def get_inputs():
    return [torch.randn(batch_size, 256, 512)]


def get_init_inputs():
    return [normalized_shape, lambd]
