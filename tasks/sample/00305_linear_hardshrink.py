import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.linear -> F.hardshrink.
    Input (batch_size, 2048), output (batch_size, 8192).
    """

    def __init__(self, in_features, out_features, lambd):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.lambd = lambd

    def forward(self, x):
        x = F.linear(x, self.weight, self.bias)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 10224
in_features = 2048
out_features = 8192
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [in_features, out_features, lambd]
