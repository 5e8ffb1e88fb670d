import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> torch.sigmoid.
    Input (batch_size, 4096), output (batch_size, 256).
    """

    def __init__(self, out_features, in_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.sigmoid(x)
        return x


batch_size = 204208
out_features = 256
in_features = 4096


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [out_features, in_features]
