import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> nn.BatchNorm1d.
    Input (batch_size, 2048), output (batch_size, 256).
    """

    def __init__(self, out_features, in_features, num_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = self.linear(x)
        x = self.batch_norm(x)
        return x


batch_size = 333728
out_features = 256
in_features = 2048
num_features = 256


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [out_features, in_features, num_features]
