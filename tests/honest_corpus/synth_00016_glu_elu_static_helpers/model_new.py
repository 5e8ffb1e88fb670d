import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """GLU (dim 1) then ELU."""

    def __init__(self, alpha):
        super(ModelNew, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty(rows, cols // 2, dtype=x.dtype, device=x.device)
        kernels.glu_elu_launch(x, y, rows, cols // 2, self.alpha)
        return y
