import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> F.softsign -> F.hardshrink.
    Input (batch_size, 64, 256), output (batch_size, 64, 2048).
    """

    def __init__(self, out_features, in_features, lambd):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.lambd = lambd

    def forward(self, x):
        x = self.linear(x)
        x = F.softsign(x)
        x = F.hardshrink(x, lambd=self.lambd)
        return x


batch_size = 7168
out_features = 2048
in_features = 256
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 64, 256)]


def get_init_inputs():
    return [out_features, in_features, lambd]
