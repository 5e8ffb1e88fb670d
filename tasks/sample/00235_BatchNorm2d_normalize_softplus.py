import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> F.normalize -> F.softplus.
    Input (batch_size, 32, 32, 32), output (batch_size, 32, 32, 32).
    """

    def __init__(self, num_features, beta):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.beta = beta

    def forward(self, x):
        x = self.batch_norm(x)
        x = F.normalize(x, p=2.0, dim=1)
        x = F.softplus(x, beta=self.beta)
        return x


batch_size = 12912
num_features = 32
beta = 1.0


def get_inputs():
    return [torch.randn(batch_size, 32, 32, 32)]


def get_init_inputs():
    return [num_features, beta]
