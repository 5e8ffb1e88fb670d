import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> torch.logsumexp -> torch.einsum.
    Input (batch_size, 16, 128, 128), output (batch_size, 16, 8192).
    """

    def __init__(self, num_features, in_features, out_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.logsumexp(x, dim=2, keepdim=False)
        x = torch.einsum("bij,jk->bik", x, self.weight)
        return x


batch_size = 1968
num_features = 16
in_features = 128
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, 16, 128, 128)]


def get_init_inputs():
    return [num_features, in_features, out_features]
