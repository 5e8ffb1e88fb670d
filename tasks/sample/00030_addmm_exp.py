import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> torch.exp.
    Input (batch_size, 1024), output (batch_size, 1024).
    """

    def __init__(self, in_features, out_features, exp_clamp):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.exp_clamp = exp_clamp

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = torch.exp(torch.clamp(x, max=self.exp_clamp))
        return x


batch_size = 104736
in_features = 1024
out_features = 1024
exp_clamp = 20.0


def get_inputs():
    return [torch.randn(batch_size, 1024)]


def get_init_inputs():
    return [in_features, out_features, exp_clamp]
