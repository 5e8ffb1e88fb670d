import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> torch.min.
    Input (batch_size, 4096), output (batch_size).
    """

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.layer_norm(x)
        x = torch.min(x, dim=1, keepdim=False)[0]
        return x


batch_size = 134736
normalized_shape = 4096


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [normalized_shape]
