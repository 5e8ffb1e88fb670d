import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.clamp_min -> torch.abs -> Tensor.view.
    Input (batch_size, 4096), output (batch_size, 2048, 2).
    """

    def __init__(self, clamp_min):
        super(Model, self).__init__()
        self.clamp_min = clamp_min

    def forward(self, x):
        x = torch.clamp_min(x, self.clamp_min)
        x = torch.abs(x)
        x = x.view(x.size(0), 2048, 2)
        return x


batch_size = 189504
clamp_min = -0.5


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [clamp_min]
