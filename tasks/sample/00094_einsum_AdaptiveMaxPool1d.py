import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> nn.AdaptiveMaxPool1d.
    Input (batch_size, 64, 2048), output (batch_size, 64, 4).
    """

    def __init__(self, in_features, out_features, output_size):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.adaptive_pool = nn.AdaptiveMaxPool1d(output_size)

    def forward(self, x):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = self.adaptive_pool(x)
        return x


batch_size = 672
in_features = 2048
out_features = 4096
output_size = 4


def get_inputs():
    return [torch.randn(batch_size, 64, 2048)]


def get_init_inputs():
    return [in_features, out_features, output_size]
