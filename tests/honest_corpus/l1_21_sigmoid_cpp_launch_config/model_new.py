import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Sigmoid; launch configuration from a C++ helper."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.sigmoid_launch(x, y, x.numel())
        return y
