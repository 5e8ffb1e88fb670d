import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> torch.rsqrt -> nn.GroupNorm -> nn.AdaptiveAvgPool1d.
    Input (batch_size, 512, 256), output (batch_size, 512, 7).
    """

    def __init__(self, in_features, out_features, rsqrt_eps, num_channels, num_groups, output_size):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.rsqrt_eps = rsqrt_eps
        self.group_norm = nn.GroupNorm(num_groups, num_channels)
        self.adaptive_pool = nn.AdaptiveAvgPool1d(output_size)

    def forward(self, x):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = torch.rsqrt(torch.abs(x) + self.rsqrt_eps)
        x = self.group_norm(x)
        x = self.adaptive_pool(x)
        return x


batch_size = 64
in_features = 256
out_features = 4096
rsqrt_eps = 1.0
num_channels = 512
num_groups = 2
output_size = 7


def get_inputs():
    return [torch.randn(batch_size, 512, 256)]


def get_init_inputs():
    return [in_features, out_features, rsqrt_eps, num_channels, num_groups, output_size]
