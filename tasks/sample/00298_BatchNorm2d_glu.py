import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> F.glu.
    Input (batch_size, 8, 16, 16), output (batch_size, 4, 16, 16).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = F.glu(x, dim=1)
        return x


batch_size = 495744
num_features = 8


def get_inputs():
    return [torch.randn(batch_size, 8, 16, 16)]


def get_init_inputs():
    return [num_features]
