import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> torch.flatten.
    Input (batch_size, 4, 256, 512), output (batch_size, 2097152).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = torch.flatten(x, start_dim=1)
        return x


batch_size = 304
in_features = 512
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, 4, 256, 512)]


def get_init_inputs():
    return [in_features, out_features]
