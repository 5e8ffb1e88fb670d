import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Row softmax with an online max/sum: two passes over each row (kernels/softmax.cu)."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        kernels.softmax_forward(x, y, x.shape[0], x.shape[1])
        return y
