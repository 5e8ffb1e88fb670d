import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> nn.LPPool2d.
    Input (batch_size, 32, 64, 64), output (batch_size, 32, 32, 32).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.lp_pool = nn.LPPool2d(2, kernel_size=2)

    def forward(self, x):
        x = self.batch_norm(x)
        x = self.lp_pool(torch.abs(x) + 1e-06)
        return x


batch_size = 4704
num_features = 32


def get_inputs():
    return [torch.randn(batch_size, 32, 64, 64)]


def get_init_inputs():
    return [num_features]
