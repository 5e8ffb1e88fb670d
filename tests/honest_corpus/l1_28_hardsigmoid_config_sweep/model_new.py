import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """HardSigmoid; config picks the block size (swept by `benchmark`)."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.hardsigmoid_launch(x, y, x.numel(), 1)
        return y
