import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.tanh -> torch.stack.
    Input (batch_size, 128, 1024), output (batch_size, 2, 128, 1024).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.tanh(x)
        x = torch.stack([x, torch.sigmoid(x)], dim=1)
        return x


batch_size = 4096


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return []
