import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> torch.index_select.
    Input (batch_size, 16, 16, 16), output (batch_size, 16, 16, 8).
    """

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.layer_norm(x)
        x = torch.index_select(x, 3, torch.arange(0, 16, 2, device=x.device))
        return x


batch_size = 97744
normalized_shape = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 16, 16)]


def get_init_inputs():
    return [normalized_shape]
