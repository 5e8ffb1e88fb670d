import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> torch.maximum -> F.leaky_relu.
    Input (batch_size, 128, 2048), output (batch_size, 128, 1024).
    """

    def __init__(self, in_features, out_features, negative_slope):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.negative_slope = negative_slope

    def forward(self, x, y):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = torch.maximum(x, y)
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        return x


batch_size = 768
in_features = 2048
out_features = 1024
negative_slope = 0.2


def get_inputs():
    return [torch.randn(batch_size, 128, 2048), torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [in_features, out_features, negative_slope]
