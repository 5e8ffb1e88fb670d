import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """C = A @ B through cuBLAS."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        m, k = A.shape
        n = B.shape[1]
        C = torch.empty(m, n, dtype=A.dtype, device=A.device)
        kernels.matmul_cublas(A, B, C, m, k, n)
        return C
