import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> F.softplus -> nn.BatchNorm1d.
    Input (batch_size, 4096), output (batch_size, 4096).
    """

    def __init__(self, in_features, out_features, beta, num_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.beta = beta
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = F.softplus(x, beta=self.beta)
        x = self.batch_norm(x)
        return x


batch_size = 26512
in_features = 4096
out_features = 4096
beta = 1.0
num_features = 4096


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [in_features, out_features, beta, num_features]
