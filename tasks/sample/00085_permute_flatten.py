import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: Tensor.permute -> torch.flatten.
    Input (batch_size, 8, 32, 128), output (batch_size, 32768).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = x.permute(0, 3, 1, 2).contiguous()
        x = torch.flatten(x, start_dim=1)
        return x


batch_size = 30896


def get_inputs():
    return [torch.randn(batch_size, 8, 32, 128)]


def get_init_inputs():
    return []
