import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """MinGPT's tanh GELU."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.new_gelu_launch(x, y, x.numel())
        return y
