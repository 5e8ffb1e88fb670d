import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.selu -> torch.norm -> torch.mean.
    Input (batch_size, 64, 4096), output (batch_size, 1, 1).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = F.selu(x)
        x = torch.norm(x, p=2, dim=1, keepdim=True)
        x = torch.mean(x, dim=2, keepdim=True)
        return x


batch_size = 4096


def get_inputs():
    return [torch.randn(batch_size, 64, 4096)]


def get_init_inputs():
    return []
