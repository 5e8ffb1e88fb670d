import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.add -> torch.clamp -> operator.truediv.
    Input (batch_size, 8, 4, 64, 64), output (batch_size, 8, 4, 64, 64).
    """

    def __init__(self, add_value, clamp_bound, divisor):
        super(Model, self).__init__()
        self.add_value = add_value
        self.clamp_bound = clamp_bound
        self.divisor = divisor

    def forward(self, x):
        x = x + self.add_value
        x = torch.clamp(x, min=-self.clamp_bound, max=self.clamp_bound)
        x = x / self.divisor
        return x


batch_size = 2976
add_value = 0.5
clamp_bound = 0.5
divisor = 3.0


def get_inputs():
    return [torch.randn(batch_size, 8, 4, 64, 64)]


def get_init_inputs():
    return [add_value, clamp_bound, divisor]
