import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """lerp(x, tanh(x), weight) then transpose(2, 3).contiguous()."""

    def __init__(self, weight):
        super(ModelNew, self).__init__()
        self.weight = weight

    def forward(self, x):
        b, c, h, w = x.shape
        y = torch.empty(b, c, w, h, dtype=x.dtype, device=x.device)
        kernels.lerp_transpose_launch(x, y, b * c, h, w, self.weight)
        return y
