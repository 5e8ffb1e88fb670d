import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> torch.flip.
    Input (batch_size, 16, 64, 256), output (batch_size, 16, 64, 1024).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = torch.flip(x, dims=[3])
        return x


batch_size = 224
in_features = 256
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, 16, 64, 256)]


def get_init_inputs():
    return [in_features, out_features]
