import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.celu -> operator.add(parameter).
    Input (batch_size, 2048), output (batch_size, 2048).
    """

    def __init__(self, alpha, bias_shape):
        super(Model, self).__init__()
        self.alpha = alpha
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        x = F.celu(x, alpha=self.alpha)
        x = x + self.bias
        return x


batch_size = 508480
alpha = 2.0
bias_shape = (2048,)


def get_inputs():
    return [torch.randn(batch_size, 2048)]


def get_init_inputs():
    return [alpha, bias_shape]
