import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> torch.max.
    Input (batch_size, 512, 1024), output (batch_size, 8192).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = torch.max(x, dim=1, keepdim=False)[0]
        return x


batch_size = 15
in_features = 1024
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, 512, 1024)]


def get_init_inputs():
    return [in_features, out_features]
