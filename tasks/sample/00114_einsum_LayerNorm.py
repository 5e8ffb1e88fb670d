import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> nn.LayerNorm.
    Input (batch_size, 128, 512), output (batch_size, 128, 1024).
    """

    def __init__(self, in_features, out_features, normalized_shape):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = self.layer_norm(x)
        return x


batch_size = 880
in_features = 512
out_features = 1024
normalized_shape = 1024


def get_inputs():
    return [torch.randn(batch_size, 128, 512)]


def get_init_inputs():
    return [in_features, out_features, normalized_shape]
