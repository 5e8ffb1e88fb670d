import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """diag(A) @ B as a row scaling."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        n, m = B.shape
        C = torch.empty(n, m, dtype=B.dtype, device=B.device)
        kernels.diag_matmul(A, B, C, n, m)
        return C
