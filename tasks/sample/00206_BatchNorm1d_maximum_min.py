import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.BatchNorm1d -> torch.maximum -> torch.min.
    Input (batch_size, 256), output (batch_size).
    """

    def __init__(self, num_features):
        super(Model, self).__init__()
        self.batch_norm = nn.BatchNorm1d(num_features)

    def forward(self, x, y):
        x = self.batch_norm(x)
        x = torch.maximum(x, y)
        x = torch.min(x, dim=1, keepdim=False)[0]
        return x


batch_size = 4194304
num_features = 256


def get_inputs():
    return [torch.randn(batch_size, 256), torch.randn(batch_size, 256)]


def get_init_inputs():
    return [num_features]
