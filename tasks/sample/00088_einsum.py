import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum.
    Input (batch_size, 512, 2048), output (batch_size, 512, 256).
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        return x


batch_size = 1024
in_features = 2048
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, 512, 2048)]


def get_init_inputs():
    return [in_features, out_features]
