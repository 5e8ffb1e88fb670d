import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> operator.mul -> nn.BatchNorm1d.
    Input (batch_size, 8192), output (batch_size, 256).
    """

    def __init__(self, in_features, out_features, scale_factor, num_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.scale_factor = scale_factor
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = x * self.scale_factor
        x = self.batch_norm(x)
        return x


batch_size = 130608
in_features = 8192
out_features = 256
scale_factor = 2.0
num_features = 256


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [in_features, out_features, scale_factor, num_features]
