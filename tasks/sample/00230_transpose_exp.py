import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.transpose -> torch.exp.
    Input (batch_size, 128, 1024), output (batch_size, 1024, 128).
    """

    def __init__(self, exp_clamp):
        super(Model, self).__init__()
        self.exp_clamp = exp_clamp

    def forward(self, x):
        x = torch.transpose(x, 1, 2).contiguous()
        x = torch.exp(torch.clamp(x, max=self.exp_clamp))
        return x


batch_size = 8192
exp_clamp = 20.0


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [exp_clamp]
