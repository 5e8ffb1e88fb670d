import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.glu -> torch.mul -> torch.clamp.
    Input (batch_size, 32, 32, 128), output (batch_size, 16, 32, 128).
    """

    def __init__(self, clamp_bound):
        super(Model, self).__init__()
        self.clamp_bound = clamp_bound

    def forward(self, x, y):
        x = F.glu(x, dim=1)
        x = torch.mul(x, y)
        x = torch.clamp(x, min=-self.clamp_bound, max=self.clamp_bound)
        return x


batch_size = 8192
clamp_bound = 0.5


def get_inputs():
    return [torch.randn(batch_size, 32, 32, 128), torch.randn(batch_size, 16, 32, 128)]


def get_init_inputs():
    return [clamp_bound]
