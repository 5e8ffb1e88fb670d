import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> operator.sub.
    Input (batch_size, 2048), output (batch_size, 512).
    """

    def __init__(self, in_features, out_features, subtract_value):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.subtract_value = subtract_value

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = x - self.subtract_value
        return x


batch_size = 119040
in_features = 2048
out_features = 512
subtract_value = 0.25


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [in_features, out_features, subtract_value]
