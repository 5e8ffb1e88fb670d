import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.max -> torch.pow -> F.logsigmoid -> F.selu.
    Input (batch_size, 16, 32, 32), output (batch_size, 16, 32).
    """

    def __init__(self, exponent):
        super(Model, self).__init__()
        self.exponent = exponent

    def forward(self, x):
        x = torch.max(x, dim=2, keepdim=False)[0]
        x = torch.pow(x, self.exponent)
        x = F.logsigmoid(x)
        x = F.selu(x)
        return x


batch_size = 65536
exponent = 2


def get_inputs():
    return [torch.randn(batch_size, 16, 32, 32)]


def get_init_inputs():
    return [exponent]
