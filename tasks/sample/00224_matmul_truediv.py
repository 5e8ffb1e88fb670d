import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> operator.truediv.
    Input (batch_size, 8, 64, 512), output (batch_size, 8, 64, 1024).
    """

    def __init__(self, in_features, out_features, divisor):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.divisor = divisor

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = x / self.divisor
        return x


batch_size = 1104
in_features = 512
out_features = 1024
divisor = 0.5


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 512)]


def get_init_inputs():
    return [in_features, out_features, divisor]
