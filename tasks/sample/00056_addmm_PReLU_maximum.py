import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> nn.PReLU -> torch.maximum.
    Input (batch_size, 2048), output (batch_size, 4096).
    """

    def __init__(self, in_features, out_features, num_channels):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.prelu = nn.PReLU(num_parameters=num_channels)

    def forward(self, x, y):
        x = torch.addmm(self.bias, x, self.weight)
        x = self.prelu(x)
        x = torch.maximum(x, y)
        return x


batch_size = 6816
in_features = 2048
out_features = 4096
num_channels = 4096


def get_inputs():
    return [torch.randn(batch_size, 2048), torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [in_features, out_features, num_channels]
