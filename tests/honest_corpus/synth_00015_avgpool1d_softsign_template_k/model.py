import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.AvgPool1d -> F.softsign.
    Input (batch_size, 512, 512), output (batch_size, 512, 170).
    """

    def __init__(self, pool_kernel_size):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = self.avg_pool(x)
        x = F.softsign(x)
        return x


batch_size = 4096
pool_kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, 512, 512)]


def get_init_inputs():
    return [pool_kernel_size]
