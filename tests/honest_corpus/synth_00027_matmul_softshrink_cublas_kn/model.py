import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> F.softshrink.
    Input (batch_size, 128, 1024), output (batch_size, 128, 1024).
    """

    def __init__(self, in_features, out_features, lambd):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.lambd = lambd

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = F.softshrink(x, lambd=self.lambd)
        return x


batch_size = 3024
in_features = 1024
out_features = 1024
lambd = 0.5


def get_inputs():
    return [torch.randn(batch_size, 128, 1024)]


def get_init_inputs():
    return [in_features, out_features, lambd]
