import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.pow -> nn.Linear -> F.leaky_relu -> operator.truediv.
    Input (batch_size, 256), output (batch_size, 1024).
    """

    def __init__(self, exponent, out_features, in_features, negative_slope, divisor):
        super(Model, self).__init__()
        self.exponent = exponent
        self.linear = nn.Linear(in_features, out_features)
        self.negative_slope = negative_slope
        self.divisor = divisor

    def forward(self, x):
        x = torch.pow(x, self.exponent)
        x = self.linear(x)
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = x / self.divisor
        return x


batch_size = 288640
exponent = 3
out_features = 1024
in_features = 256
negative_slope = 0.01
divisor = 3.0


def get_inputs():
    return [torch.randn(batch_size, 256)]


def get_init_inputs():
    return [exponent, out_features, in_features, negative_slope, divisor]
