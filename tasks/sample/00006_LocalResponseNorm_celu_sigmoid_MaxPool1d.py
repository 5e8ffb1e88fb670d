import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LocalResponseNorm -> F.celu -> torch.sigmoid -> nn.MaxPool1d.
    Input (batch_size, 128, 512), output (batch_size, 128, 170).
    """

    def __init__(self, lrn_size, alpha, pool_kernel_size):
        super(Model, self).__init__()
        self.lrn = nn.LocalResponseNorm(lrn_size)
        self.alpha = alpha
        self.max_pool = nn.MaxPool1d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = self.lrn(x)
        x = F.celu(x, alpha=self.alpha)
        x = torch.sigmoid(x)
        x = self.max_pool(x)
        return x


batch_size = 5408
lrn_size = 2
alpha = 1.0
pool_kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, 128, 512)]


def get_init_inputs():
    return [lrn_size, alpha, pool_kernel_size]
