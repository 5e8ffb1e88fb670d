import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.leaky_relu -> torch.unsqueeze.
    Input (batch_size, 2048), output (batch_size, 1, 2048).
    """

    def __init__(self, negative_slope):
        super(Model, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = torch.unsqueeze(x, 1)
        return x


batch_size = 524288
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [negative_slope]
