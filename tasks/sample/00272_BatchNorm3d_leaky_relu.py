import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> F.leaky_relu.
    Input (batch_size, 8, 16, 32, 32), output (batch_size, 8, 16, 32, 32).
    """

    def __init__(self, num_features, negative_slope):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)
        self.negative_slope = negative_slope

    def forward(self, x):
        x = self.batch_norm(x)
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        return x


batch_size = 8192
num_features = 8
negative_slope = 0.1


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 32, 32)]


def get_init_inputs():
    return [num_features, negative_slope]
