import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.AdaptiveMaxPool1d -> torch.maximum -> F.hardswish.
    Input (batch_size, 512, 4096), output (batch_size, 512, 7).
    """

    def __init__(self, output_size):
        super(Model, self).__init__()
        self.adaptive_pool = nn.AdaptiveMaxPool1d(output_size)

    def forward(self, x, y):
        x = self.adaptive_pool(x)
        x = torch.maximum(x, y)
        x = F.hardswish(x)
        return x


batch_size = 512
output_size = 7


def get_inputs():
    return [torch.randn(batch_size, 512, 4096), torch.randn(batch_size, 512, 7)]


def get_init_inputs():
    return [output_size]
