import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> F.hardswish.
    Input (batch_size, 128, 2048), output (batch_size, 128, 1024).
    """

    def __init__(self, out_features, in_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = F.hardswish(x)
        return x


batch_size = 1344
out_features = 1024
in_features = 2048


def get_inputs():
    return [torch.randn(batch_size, 128, 2048)]


def get_init_inputs():
    return [out_features, in_features]
