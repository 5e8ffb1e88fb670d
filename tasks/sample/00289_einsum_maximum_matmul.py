import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> torch.maximum -> torch.matmul.
    Input (batch_size, 128, 256), output (batch_size, 128, 256).
    """

    def __init__(self, in_features, out_features, in_features_2, out_features_2):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.weight_2 = nn.Parameter(torch.randn(in_features_2, out_features_2) * 0.02)
        self.bias_2 = nn.Parameter(torch.zeros(out_features_2))

    def forward(self, x, y):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = torch.maximum(x, y)
        x = torch.matmul(x, self.weight_2) + self.bias_2
        return x


batch_size = 2176
in_features = 256
out_features = 1024
in_features_2 = 1024
out_features_2 = 256


def get_inputs():
    return [torch.randn(batch_size, 128, 256), torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [in_features, out_features, in_features_2, out_features_2]
