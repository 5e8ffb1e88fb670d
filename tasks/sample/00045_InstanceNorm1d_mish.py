import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.InstanceNorm1d -> F.mish.
    Input (batch_size, 256, 128), output (batch_size, 256, 128).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.instance_norm = nn.InstanceNorm1d(num_features)

    def forward(self, x):
        x = self.instance_norm(x)
        x = F.mish(x)
        return x


batch_size = 8800
num_features = 256


def get_inputs():
    return [torch.randn(batch_size, 256, 128)]


def get_init_inputs():
    return [num_features]
