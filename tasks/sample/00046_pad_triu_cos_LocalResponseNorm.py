import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.pad -> torch.triu -> torch.cos -> nn.LocalResponseNorm.
    Input (batch_size, 32, 16, 16), output (batch_size, 32, 16, 18).
    """

    def __init__(self, lrn_size):
        super(Model, self).__init__()
        self.lrn = nn.LocalResponseNorm(lrn_size)

    def forward(self, x):
        x = F.pad(x, (1, 1))
        x = torch.triu(x, diagonal=1)
        x = torch.cos(x)
        x = self.lrn(x)
        return x


batch_size = 116496
lrn_size = 2


def get_inputs():
    return [torch.randn(batch_size, 32, 16, 16)]


def get_init_inputs():
    return [lrn_size]
