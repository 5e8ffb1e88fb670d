import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.linear -> operator.mul(parameter) -> F.softmin -> torch.tanh -> torch.gather.
    Input (batch_size, 1024), output (batch_size, 1024).
    """

    def __init__(self, in_features, out_features, scale_shape):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.scale = nn.Parameter(1.0 + torch.randn(scale_shape) * 0.02)

    def forward(self, x, index):
        x = F.linear(x, self.weight, self.bias)
        x = x * self.scale
        x = F.softmin(x, dim=1)
        x = torch.tanh(x)
        x = torch.gather(x, 1, index)
        return x


batch_size = 82048
in_features = 1024
out_features = 1024
scale_shape = (1024,)


def get_inputs():
    return [torch.randn(batch_size, 1024), torch.randint(0, 1024, (batch_size, 1024))]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
