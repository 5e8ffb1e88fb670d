import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> F.gelu -> nn.LayerNorm.
    Input (batch_size, 16, 64, 64), output (batch_size, 16, 64, 64).
    """

    def __init__(self, num_features, normalized_shape):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.batch_norm(x)
        x = F.gelu(x)
        x = self.layer_norm(x)
        return x


batch_size = 6512
num_features = 16
normalized_shape = 64


def get_inputs():
    return [torch.randn(batch_size, 16, 64, 64)]


def get_init_inputs():
    return [num_features, normalized_shape]
