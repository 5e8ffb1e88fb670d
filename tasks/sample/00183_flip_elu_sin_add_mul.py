import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.flip -> F.elu -> torch.sin -> operator.add -> torch.mul.
    Input (batch_size, 3, 16, 32, 32), output (batch_size, 3, 16, 32, 32).
    """

    def __init__(self, alpha, add_value):
        super(Model, self).__init__()
        self.alpha = alpha
        self.add_value = add_value

    def forward(self, x, y):
        x = torch.flip(x, dims=[2])
        x = F.elu(x, alpha=self.alpha)
        x = torch.sin(x)
        x = x + self.add_value
        x = torch.mul(x, y)
        return x


batch_size = 21840
alpha = 0.5
add_value = 0.5


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 32, 32), torch.randn(batch_size, 3, 16, 32, 32)]


def get_init_inputs():
    return [alpha, add_value]
