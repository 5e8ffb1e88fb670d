import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.log -> nn.AdaptiveAvgPool1d.
    Input (batch_size, 128, 1024), output (batch_size, 128, 4).
    """

    def __init__(self, log_eps, output_size):
        super(Model, self).__init__()
        self.log_eps = log_eps
        self.adaptive_pool = nn.AdaptiveAvgPool1d(output_size)

    def forward(self, x):
        x = torch.log(torch.abs(x) + self.log_eps)
        x = self.adaptive_pool(x)
        return x


batch_size = 4368
log_eps = 1.0
output_size = 4


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [log_eps, output_size]
