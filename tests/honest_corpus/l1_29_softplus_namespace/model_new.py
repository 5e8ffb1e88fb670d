import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Softplus (beta 1, threshold 20)."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.softplus_launch(x, y, x.numel())
        return y
