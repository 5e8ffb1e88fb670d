import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """transpose(1, 2).contiguous() then softshrink."""

    def __init__(self, lambd):
        super(ModelNew, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        b, h, w = x.shape
        y = torch.empty(b, w, h, dtype=x.dtype, device=x.device)
        kernels.transpose_softshrink_launch(x, y, b, h, w, self.lambd)
        return y
