import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """log_softmax(dim=2), pow, softsign."""

    def __init__(self, exponent):
        super(ModelNew, self).__init__()
        self.exponent = exponent

    def forward(self, x):
        b, c, d, h, w = x.shape
        y = torch.empty_like(x)
        kernels.log_softmax_pow_softsign_launch(x, y, b * c, d, h * w, float(self.exponent))
        return y
