import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cos(x + y)."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x, y):
        out = torch.empty_like(x)
        kernels.add_cos_launch(x, y, out, x.numel())
        return out
