import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> torch.where.
    Input (batch_size, 8192), output (batch_size, 4096).
    """

    def __init__(self, in_features, out_features, negative_scale):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.negative_scale = negative_scale

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = torch.where(x > 0, x, x * self.negative_scale)
        return x


batch_size = 8080
in_features = 8192
out_features = 4096
negative_scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [in_features, out_features, negative_scale]
