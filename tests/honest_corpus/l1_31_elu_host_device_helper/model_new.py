import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """ELU."""

    def __init__(self, alpha: float = 1.0):
        super(ModelNew, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.elu_launch(x, y, x.numel(), self.alpha)
        return y
