import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.bmm -> torch.cat.
    Input (batch_size, 512, 256), output (batch_size, 1024, 256).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, y):
        x = torch.bmm(x, y)
        x = torch.cat([x, torch.relu(x)], dim=1)
        return x


batch_size = 1376


def get_inputs():
    return [torch.randn(batch_size, 512, 256), torch.randn(batch_size, 256, 256)]


def get_init_inputs():
    return []
