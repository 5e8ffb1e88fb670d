import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> nn.BatchNorm1d -> torch.square.
    Input (batch_size, 128, 512), output (batch_size, 128, 2048).
    """

    def __init__(self, in_features, out_features, num_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = self.batch_norm(x)
        x = torch.square(x)
        return x


batch_size = 992
in_features = 512
out_features = 2048
num_features = 128


def get_inputs():
    return [torch.randn(batch_size, 128, 512)]


def get_init_inputs():
    return [in_features, out_features, num_features]
