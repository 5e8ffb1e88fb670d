import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.elu -> F.celu.
    Input (batch_size, 3, 4, 64, 64), output (batch_size, 3, 4, 64, 64).
    """

    def __init__(self, alpha, alpha_2):
        super(Model, self).__init__()
        self.alpha = alpha
        self.alpha_2 = alpha_2

    def forward(self, x):
        x = F.elu(x, alpha=self.alpha)
        x = F.celu(x, alpha=self.alpha_2)
        return x


batch_size = 21840
alpha = 1.0
alpha_2 = 2.0


def get_inputs():
    return [torch.randn(batch_size, 3, 4, 64, 64)]


def get_init_inputs():
    return [alpha, alpha_2]
