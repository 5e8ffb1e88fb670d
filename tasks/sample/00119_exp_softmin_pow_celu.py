import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.exp -> F.softmin -> torch.pow -> F.celu.
    Input (batch_size, 32, 16, 16), output (batch_size, 32, 16, 16).
    """

    def __init__(self, exp_clamp, exponent, alpha):
        super(Model, self).__init__()
        self.exp_clamp = exp_clamp
        self.exponent = exponent
        self.alpha = alpha

    def forward(self, x):
        x = torch.exp(torch.clamp(x, max=self.exp_clamp))
        x = F.softmin(x, dim=3)
        x = torch.pow(x, self.exponent)
        x = F.celu(x, alpha=self.alpha)
        return x


batch_size = 131072
exp_clamp = 20.0
exponent = 2
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, 32, 16, 16)]


def get_init_inputs():
    return [exp_clamp, exponent, alpha]
