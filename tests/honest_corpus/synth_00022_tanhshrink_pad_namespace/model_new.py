import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """tanhshrink then F.pad(., (1, 1))."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        w = x.shape[-1]
        y = torch.empty(*x.shape[:-1], w + 2, dtype=x.dtype, device=x.device)
        kernels.tanhshrink_pad_launch(x, y, x.numel() // w, w, 1)
        return y
