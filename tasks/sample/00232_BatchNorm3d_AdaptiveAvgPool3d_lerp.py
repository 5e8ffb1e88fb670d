import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> nn.AdaptiveAvgPool3d -> torch.lerp.
    Input (batch_size, 3, 16, 32, 32), output (batch_size, 3, 7, 7, 7).
    """

    def __init__(self, num_features, output_size, weight):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)
        self.adaptive_pool = nn.AdaptiveAvgPool3d(output_size)
        self.weight = weight

    def forward(self, x):
        x = self.batch_norm(x)
        x = self.adaptive_pool(x)
        x = torch.lerp(x, torch.tanh(x), self.weight)
        return x


batch_size = 21840
num_features = 3
output_size = 7
weight = 0.25


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 32, 32)]


def get_init_inputs():
    return [num_features, output_size, weight]
