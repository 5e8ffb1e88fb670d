import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """max(dim=2), pow, logsigmoid, selu in one pass."""

    def __init__(self, exponent):
        super(ModelNew, self).__init__()
        self.exponent = exponent

    def forward(self, x):
        b, c, h, w = x.shape
        y = torch.empty(b, c, w, dtype=x.dtype, device=x.device)
        kernels.max_pow_logsigmoid_selu(x, y, b * c, h, w, float(self.exponent))
        return y
