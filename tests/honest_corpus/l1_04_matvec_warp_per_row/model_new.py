import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """A @ B for B of shape (K, 1): one warp per row."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        m, k = A.shape
        C = torch.empty(m, 1, dtype=A.dtype, device=A.device)
        kernels.matvec_launch(A, B, C, m, k)
        return C
