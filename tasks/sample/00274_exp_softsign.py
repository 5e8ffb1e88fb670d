import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.exp -> F.softsign.
    Input (batch_size, 512), output (batch_size, 512).
    """

    def __init__(self, exp_clamp):
        super(Model, self).__init__()
        self.exp_clamp = exp_clamp

    def forward(self, x):
        x = torch.exp(torch.clamp(x, max=self.exp_clamp))
        x = F.softsign(x)
        return x


batch_size = 916064
exp_clamp = 10.0


def get_inputs():
    return [torch.randn(batch_size, 512)]


def get_init_inputs():
    return [exp_clamp]
