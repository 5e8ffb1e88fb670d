import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.AdaptiveAvgPool2d -> torch.sigmoid.
    Input (batch_size, 64, 256, 256), output (batch_size, 64, 2, 2).
    """

    def __init__(self, output_size):
        super(Model, self).__init__()
        self.adaptive_pool = nn.AdaptiveAvgPool2d(output_size)

    def forward(self, x):
        x = self.adaptive_pool(x)
        x = torch.sigmoid(x)
        return x


batch_size = 256
output_size = 2


def get_inputs():
    return [torch.randn(batch_size, 64, 256, 256)]


def get_init_inputs():
    return [output_size]
