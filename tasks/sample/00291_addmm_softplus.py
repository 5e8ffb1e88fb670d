import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> F.softplus.
    Input (batch_size, 1024), output (batch_size, 2048).
    """

    def __init__(self, in_features, out_features, beta):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.beta = beta

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = F.softplus(x, beta=self.beta)
        return x


batch_size = 43008
in_features = 1024
out_features = 2048
beta = 2.0


def get_inputs():
    return [torch.randn(batch_size, 1024)]


def get_init_inputs():
    return [in_features, out_features, beta]
