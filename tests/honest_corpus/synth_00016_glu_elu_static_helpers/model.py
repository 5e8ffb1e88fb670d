import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.glu -> F.elu.
    Input (batch_size, 256), output (batch_size, 128).
    """

    def __init__(self, alpha):
        super(Model, self).__init__()
        self.alpha = alpha

    def forward(self, x):
        x = F.glu(x, dim=1)
        x = F.elu(x, alpha=self.alpha)
        return x


batch_size = 4194304
alpha = 0.5


def get_inputs():
    return [torch.randn(batch_size, 256)]


def get_init_inputs():
    return [alpha]
