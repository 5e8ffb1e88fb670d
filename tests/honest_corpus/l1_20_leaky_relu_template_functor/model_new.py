import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """LeakyReLU through a templated map kernel."""

    def __init__(self, negative_slope: float = 0.01):
        super(ModelNew, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.leaky_relu_launch(x, y, x.numel(), self.negative_slope)
        return y
