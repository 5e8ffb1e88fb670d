import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.hardswish -> F.mish.
    Input (batch_size, 32, 256, 256), output (batch_size, 32, 256, 256).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = F.hardswish(x)
        x = F.mish(x)
        return x


batch_size = 512


def get_inputs():
    return [torch.randn(batch_size, 32, 256, 256)]


def get_init_inputs():
    return []
