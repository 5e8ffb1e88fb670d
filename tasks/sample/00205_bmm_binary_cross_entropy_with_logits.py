import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> F.binary_cross_entropy_with_logits.
    Input (batch_size, 64, 512), output a scalar.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y, target):
        x = torch.bmm(x, y)
        x = F.binary_cross_entropy_with_logits(x, target)
        return x


batch_size = 4096


def get_inputs():
    return [torch.randn(batch_size, 64, 512), torch.randn(batch_size, 512, 512), torch.rand(batch_size, 64, 512)]


def get_init_inputs():
    return []
