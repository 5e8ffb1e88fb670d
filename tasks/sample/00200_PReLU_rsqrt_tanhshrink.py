import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.PReLU -> torch.rsqrt -> F.tanhshrink.
    Input (batch_size, 256), output (batch_size, 256).
    """

    def __init__(self, num_channels, rsqrt_eps):
        super(Model, self).__init__()
        self.prelu = nn.PReLU(num_parameters=num_channels)
        self.rsqrt_eps = rsqrt_eps

    def forward(self, x):
        x = self.prelu(x)
        x = torch.rsqrt(torch.abs(x) + self.rsqrt_eps)
        x = F.tanhshrink(x)
        return x


batch_size = 1160432
num_channels = 256
rsqrt_eps = 1e-03


def get_inputs():
    return [torch.randn(batch_size, 256)]


def get_init_inputs():
    return [num_channels, rsqrt_eps]
