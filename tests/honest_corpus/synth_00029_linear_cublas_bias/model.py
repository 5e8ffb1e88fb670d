import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.linear.
    Input (batch_size, 1024), output (batch_size, 2048).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = F.linear(x, self.weight, self.bias)
        return x


batch_size = 118384
in_features = 1024
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, 1024)]


def get_init_inputs():
    return [in_features, out_features]
