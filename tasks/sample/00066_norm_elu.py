import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.norm -> F.elu.
    Input (batch_size, 128, 1024), output (batch_size, 1024).
    """

    def __init__(self, alpha):
        super(Model, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        x = torch.norm(x, p=2, dim=1, keepdim=False)
        x = F.elu(x, alpha=self.alpha)
        return x


batch_size = 8192
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [alpha]
