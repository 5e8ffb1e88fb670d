import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> torch.matmul.
    Input (batch_size, 8, 256, 64), output (batch_size, 8, 256, 1024).
    """

    def __init__(self, num_features, in_features, out_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.matmul(x, self.weight) + self.bias
        return x


batch_size = 512
num_features = 8
in_features = 64
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, 8, 256, 64)]


def get_init_inputs():
    return [num_features, in_features, out_features]
