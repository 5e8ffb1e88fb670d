import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Swish, launcher and kernel in separate .cu files."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.swish_launch(x, y, x.numel())
        return y
