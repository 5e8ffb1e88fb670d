import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.sub -> torch.norm.
    Input (batch_size, 128, 128), output (batch_size, 128).
    """

    def __init__(self, subtract_value):
        super(Model, self).__init__()
        self.subtract_value = subtract_value

    def forward(self, x):
        x = x - self.subtract_value
        x = torch.norm(x, p=2, dim=2, keepdim=False)
        return x


batch_size = 42016
subtract_value = 0.5


def get_inputs():
    return [torch.randn(batch_size, 128, 128)]


def get_init_inputs():
    return [subtract_value]
