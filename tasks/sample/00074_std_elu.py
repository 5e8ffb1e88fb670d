import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.std -> F.elu.
    Input (batch_size, 8, 4, 32, 32), output (batch_size, 8, 32, 32).
    """

    def __init__(self, alpha):
        super(Model, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        x = torch.std(x, dim=2, keepdim=False)
        x = F.elu(x, alpha=self.alpha)
        return x


batch_size = 32336
alpha = 0.5


def get_inputs():
    return [torch.randn(batch_size, 8, 4, 32, 32)]


def get_init_inputs():
    return [alpha]
