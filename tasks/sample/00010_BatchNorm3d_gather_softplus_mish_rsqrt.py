import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> torch.gather -> F.softplus -> F.mish -> torch.rsqrt.
    Input (batch_size, 8, 16, 32, 32), output (batch_size, 8, 16, 32, 32).
    """

    def __init__(self, num_features, beta, rsqrt_eps):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)
        self.beta = beta
        self.rsqrt_eps = rsqrt_eps

    def forward(self, x, index):
        x = self.batch_norm(x)
        x = torch.gather(x, 2, index)
        x = F.softplus(x, beta=self.beta)
        x = F.mish(x)
        x = torch.rsqrt(torch.abs(x) + self.rsqrt_eps)
        return x


batch_size = 7760
num_features = 8
beta = 1.0
rsqrt_eps = 1.0


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 32, 32), torch.randint(0, 16, (batch_size, 8, 16, 32, 32))]


def get_init_inputs():
    return [num_features, beta, rsqrt_eps]
