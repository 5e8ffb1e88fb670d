import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> nn.LayerNorm.
    Input (batch_size, 64, 32, 32), output (batch_size, 64, 32, 32).
    """

    def __init__(self, num_features, normalized_shape):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.batch_norm(x)
        x = self.layer_norm(x)
        return x


batch_size = 16384
num_features = 64
normalized_shape = 32


def get_inputs():
    return [torch.randn(batch_size, 64, 32, 32)]


def get_init_inputs():
    return [num_features, normalized_shape]
