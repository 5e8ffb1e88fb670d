import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> torch.var.
    Input (batch_size, 32, 256, 256), output (batch_size, 1, 256, 256).
    """

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.layer_norm(x)
        x = torch.var(x, dim=1, keepdim=True)
        return x


batch_size = 480
normalized_shape = 256


def get_inputs():
    return [torch.randn(batch_size, 32, 256, 256)]


def get_init_inputs():
    return [normalized_shape]
