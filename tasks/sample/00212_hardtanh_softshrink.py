import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.hardtanh -> F.softshrink.
    Input (batch_size, 32, 256, 256), output (batch_size, 32, 256, 256).
    """

    def __init__(self, hardtanh_bound, lambd):
        super(Model, self).__init__()
        self.hardtanh_bound = hardtanh_bound
        self.lambd = lambd

    def forward(self, x):
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        x = F.softshrink(x, lambd=self.lambd)
        return x


batch_size = 400
hardtanh_bound = 2.0
lambd = 0.25


def get_inputs():
    return [torch.randn(batch_size, 32, 256, 256)]


def get_init_inputs():
    return [hardtanh_bound, lambd]
