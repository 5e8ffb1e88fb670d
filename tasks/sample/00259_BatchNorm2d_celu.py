import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> F.celu.
    Input (batch_size, 8, 256, 256), output (batch_size, 8, 256, 256).
    """

    def __init__(self, num_features, alpha):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)
        self.alpha = alpha

    def forward(self, x):
        x = self.batch_norm(x)
        x = F.celu(x, alpha=self.alpha)
        return x


batch_size = 1024
num_features = 8
alpha = 2.0


def get_inputs():
    return [torch.randn(batch_size, 8, 256, 256)]


def get_init_inputs():
    return [num_features, alpha]
