import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """(M, K) @ (K, M) with K = 32."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        m, k = A.shape
        n = B.shape[1]
        C = torch.empty(m, n, dtype=A.dtype, device=A.device)
        kernels.tall_skinny_matmul(A, B, C, m, n, k)
        return C
