import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.linear -> torch.add.
    Input (batch_size, 1024), output (batch_size, 8192).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x, y):
        x = F.linear(x, self.weight, self.bias)
        x = torch.add(x, y)
        return x


batch_size = 37680
in_features = 1024
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, 1024), torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [in_features, out_features]
