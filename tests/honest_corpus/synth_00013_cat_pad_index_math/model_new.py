import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """cat([x, relu(x)], dim=3) then F.pad(., (3, 3))."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        b, c, d, h, w = x.shape
        y = torch.empty(b, c, d, 2 * h, w + 6, dtype=x.dtype, device=x.device)
        kernels.cat_pad_launch(x, y, b * c * d, h, w, 3)
        return y
