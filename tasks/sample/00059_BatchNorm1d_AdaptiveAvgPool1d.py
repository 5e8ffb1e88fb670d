import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> nn.AdaptiveAvgPool1d.
    Input (batch_size, 256, 128), output (batch_size, 256, 7).
    """

    def __init__(self, num_features, output_size):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)
        self.adaptive_pool = nn.AdaptiveAvgPool1d(output_size)

    def forward(self, x):
        x = self.batch_norm(x)
        x = self.adaptive_pool(x)
        return x


batch_size = 32768
num_features = 256
output_size = 7


def get_inputs():
    return [torch.randn(batch_size, 256, 128)]


def get_init_inputs():
    return [num_features, output_size]
