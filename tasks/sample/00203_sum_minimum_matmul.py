import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.sum -> torch.minimum -> torch.matmul.
    Input (batch_size, 128, 1024), output (batch_size, 256).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x, y):
        x = torch.sum(x, dim=2, keepdim=False)
        x = torch.minimum(x, y)
        x = torch.matmul(x, self.weight) + self.bias
        return x


batch_size = 8192
in_features = 128
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, 128, 1024), torch.randn(batch_size, 128)]


def get_init_inputs():
    return [in_features, out_features]
