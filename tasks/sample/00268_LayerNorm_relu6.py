import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> F.relu6.
    Input (batch_size, 512, 64), output (batch_size, 512, 64).
    """

    def __init__(self, normalized_shape):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.layer_norm(x)
        x = F.relu6(x)
        return x


batch_size = 12464
normalized_shape = 64


def get_inputs():
    return [torch.randn(batch_size, 512, 64)]


def get_init_inputs():
    return [normalized_shape]
