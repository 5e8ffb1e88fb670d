import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.AvgPool1d -> torch.log.
    Input (batch_size, 64, 128), output (batch_size, 64, 64).
    """

    def __init__(self, pool_kernel_size, log_eps):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=pool_kernel_size)
        self.log_eps = log_eps

    def forward(self, x):
        x = self.avg_pool(x)
        x = torch.log(torch.abs(x) + self.log_eps)
        return x


batch_size = 86864
pool_kernel_size = 2
log_eps = 1.0


def get_inputs():
    return [torch.randn(batch_size, 64, 128)]


def get_init_inputs():
    return [pool_kernel_size, log_eps]
