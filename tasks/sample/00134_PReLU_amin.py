import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.PReLU -> torch.amin.
    Input (batch_size, 16, 256, 128), output (batch_size, 16, 256).
    """

    def __init__(self, num_channels):
        super(Model, self).__init__()
        self.prelu = nn.PReLU(num_parameters=num_channels)

    def forward(self, x):
        x = self.prelu(x)
        x = torch.amin(x, dim=3, keepdim=False)
        return x


batch_size = 2048
num_channels = 16


def get_inputs():
    return [torch.randn(batch_size, 16, 256, 128)]


def get_init_inputs():
    return [num_channels]
