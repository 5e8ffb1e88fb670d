import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> torch.max.
    Input (batch_size, 2048), output (batch_size).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = torch.max(x, dim=1, keepdim=False)[0]
        return x


batch_size = 319936
in_features = 2048
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [in_features, out_features]
