import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.std -> nn.LayerNorm.
    Input (batch_size, 512, 2048), output (batch_size, 2048).
    """

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = torch.std(x, dim=1, keepdim=False)
        x = self.layer_norm(x)
        return x


batch_size = 1024
normalized_shape = 2048


def get_inputs():
    return [torch.randn(batch_size, 512, 2048)]


def get_init_inputs():
    return [normalized_shape]
