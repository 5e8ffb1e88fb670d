import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """AvgPool1d(k) then softsign."""

    def __init__(self, pool_kernel_size):
        super(ModelNew, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=pool_kernel_size)
        self.k = pool_kernel_size

    def forward(self, x):
        b, c, L = x.shape
        y = torch.empty(b, c, L // self.k, dtype=x.dtype, device=x.device)
        kernels.avgpool_softsign(x, y, b * c, L, self.k)
        return y
