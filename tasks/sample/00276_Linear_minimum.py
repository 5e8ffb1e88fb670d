import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> torch.minimum.
    Input (batch_size, 64, 1024), output (batch_size, 64, 4096).
    """

    def __init__(self, out_features, in_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, y):
        x = self.linear(x)
        x = torch.minimum(x, y)
        return x


batch_size = 1184
out_features = 4096
in_features = 1024


def get_inputs():
    return [torch.randn(batch_size, 64, 1024), torch.randn(batch_size, 64, 4096)]


def get_init_inputs():
    return [out_features, in_features]
