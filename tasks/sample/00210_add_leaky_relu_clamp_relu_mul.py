import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.add(parameter) -> F.leaky_relu -> torch.clamp -> torch.relu -> torch.mul.
    Input (batch_size, 256, 128), output (batch_size, 256, 128).
    """

    def __init__(self, bias_shape, negative_slope, clamp_bound):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)
        self.negative_slope = negative_slope
        self.clamp_bound = clamp_bound

    def forward(self, x, y):
        x = x + self.bias
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = torch.clamp(x, min=-self.clamp_bound, max=self.clamp_bound)
        x = torch.relu(x)
        x = torch.mul(x, y)
        return x


batch_size = 4784
bias_shape = (256, 1)
negative_slope = 0.2
clamp_bound = 0.5


def get_inputs():
    return [torch.randn(batch_size, 256, 128), torch.randn(batch_size, 256, 128)]


def get_init_inputs():
    return [bias_shape, negative_slope, clamp_bound]
