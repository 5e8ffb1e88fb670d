import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm3d -> torch.min.
    Input (batch_size, 8, 4, 16, 16), output (batch_size, 1, 4, 16, 16).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm3d(num_features)

    def forward(self, x):
        x = self.batch_norm(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        return x


batch_size = 66080
num_features = 8


def get_inputs():
    return [torch.randn(batch_size, 8, 4, 16, 16)]


def get_init_inputs():
    return [num_features]
