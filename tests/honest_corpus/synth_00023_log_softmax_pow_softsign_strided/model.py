import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.log_softmax -> torch.pow -> F.softsign.
    Input (batch_size, 8, 4, 32, 32), output (batch_size, 8, 4, 32, 32).
    """

    def __init__(self, exponent):
        super(Model, self).__init__()
        self.exponent = exponent

    def forward(self, x):
        x = torch.log_softmax(x, dim=2)
        x = torch.pow(x, self.exponent)
        x = F.softsign(x)
        return x


batch_size = 10096
exponent = 2


def get_inputs():
    return [torch.randn(batch_size, 8, 4, 32, 32)]


def get_init_inputs():
    return [exponent]
