import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> torch.lerp.
    Input (batch_size, 16, 128, 128), output (batch_size, 16, 128, 128).
    """

    def __init__(self, normalized_shape, weight):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.weight = weight

    def forward(self, x):
        x = self.layer_norm(x)
        x = torch.lerp(x, torch.tanh(x), self.weight)
        return x


batch_size = 4096
normalized_shape = 128
weight = 0.5


def get_inputs():
    return [torch.randn(batch_size, 16, 128, 128)]


def get_init_inputs():
    return [normalized_shape, weight]
