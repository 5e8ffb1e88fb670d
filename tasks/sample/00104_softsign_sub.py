import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.softsign -> operator.sub.
    Input (batch_size, 32, 16, 16), output (batch_size, 32, 16, 16).
    """

    def __init__(self, subtract_value):
        super(Model, self).__init__()
        self.subtract_value = subtract_value

    def forward(self, x):
        x = F.softsign(x)
        x = x - self.subtract_value
        return x


batch_size = 131072
subtract_value = 0.5


def get_inputs():
    return [torch.randn(batch_size, 32, 16, 16)]


def get_init_inputs():
    return [subtract_value]
