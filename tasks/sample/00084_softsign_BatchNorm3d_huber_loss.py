import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.softsign -> nn.BatchNorm3d -> F.huber_loss.
    Input (batch_size, 8, 8, 32, 32), output a scalar.
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)

    def forward(self, x, target):
        x = F.softsign(x)
        x = self.batch_norm(x)
        x = F.huber_loss(x, target, delta=1.0)
        return x


batch_size = 16384
num_features = 8


def get_inputs():
    return [torch.randn(batch_size, 8, 8, 32, 32), torch.randn(batch_size, 8, 8, 32, 32)]


def get_init_inputs():
    return [num_features]
