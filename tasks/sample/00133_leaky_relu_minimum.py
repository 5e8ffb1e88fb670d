import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.leaky_relu -> torch.minimum.
    Input (batch_size, 3, 8, 64, 64), output (batch_size, 3, 8, 64, 64).
    """

    def __init__(self, negative_slope):
        super(Model, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x, y):
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = torch.minimum(x, y)
        return x


batch_size = 5008
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, 3, 8, 64, 64), torch.randn(batch_size, 3, 8, 64, 64)]


def get_init_inputs():
    return [negative_slope]
