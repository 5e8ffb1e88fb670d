import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kernels.swish_inplace_forward(x, x.numel())
        return x
