import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        kernels.new_gelu_forward(x, y, x.numel())
        return y
