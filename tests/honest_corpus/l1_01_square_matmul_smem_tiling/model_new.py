import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """C = A @ B, square, shared-memory tiles."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        n = A.shape[0]
        C = torch.empty(n, n, dtype=A.dtype, device=A.device)
        kernels.square_matmul(A, B, C, n)
        return C
