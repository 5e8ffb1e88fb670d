import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> operator.mul.
    Input (batch_size, 256, 4096), output (batch_size, 256, 4096).
    """

    def __init__(self, normalized_shape, scale_factor):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.layer_norm(x)
        x = x * self.scale_factor
        return x


batch_size = 1024
normalized_shape = 4096
scale_factor = 1.5


def get_inputs():
    return [torch.randn(batch_size, 256, 4096)]


def get_init_inputs():
    return [normalized_shape, scale_factor]
