import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.add -> F.pad -> torch.tanh -> F.softplus.
    Input (batch_size, 1024), output (batch_size, 1030).
    """

    def __init__(self, beta):
        super(Model, self).__init__()
        self.beta = beta

    def forward(self, x, y):
        x = torch.add(x, y)
        x = F.pad(x, (3, 3))
        x = torch.tanh(x)
        x = F.softplus(x, beta=self.beta)
        return x


batch_size = 394144
beta = 2.0


def get_inputs():
    return [torch.randn(batch_size, 1024), torch.randn(batch_size, 1024)]


def get_init_inputs():
    return [beta]
