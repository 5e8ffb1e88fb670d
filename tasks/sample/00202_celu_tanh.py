import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.celu -> torch.tanh.
    Input (batch_size, 128, 512), output (batch_size, 128, 512).
    """

    def __init__(self, alpha):
        super(Model, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        x = F.celu(x, alpha=self.alpha)
        x = torch.tanh(x)
        return x


batch_size = 16384
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, 128, 512)]


def get_init_inputs():
    return [alpha]
