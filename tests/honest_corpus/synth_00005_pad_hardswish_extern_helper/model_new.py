import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """F.pad(x, (2, 2)) then hardswish, one pass."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        w = x.shape[-1]
        y = torch.empty(*x.shape[:-1], w + 4, dtype=x.dtype, device=x.device)
        kernels.pad_hardswish_launch(x, y, x.numel() // w, w, 2, w + 4)
        return y
