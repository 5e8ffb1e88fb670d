import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm2d -> torch.amin.
    Input (batch_size, 3, 64, 64), output (batch_size, 1, 64, 64).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm2d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.amin(x, dim=1, keepdim=True)
        return x


batch_size = 82480
num_features = 3


def get_inputs():
    return [torch.randn(batch_size, 3, 64, 64)]


def get_init_inputs():
    return [num_features]
