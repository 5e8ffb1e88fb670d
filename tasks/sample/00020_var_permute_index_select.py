import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.var -> Tensor.permute -> torch.index_select.
    Input (batch_size, 8, 128, 128), output (batch_size, 128, 1, 43).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.var(x, dim=1, keepdim=True)
        x = x.permute(0, 3, 1, 2).contiguous()
        x = torch.index_select(x, 3, torch.arange(0, 128, 3, device=x.device))
        return x


batch_size = 8192


def get_inputs():
    return [torch.randn(batch_size, 8, 128, 128)]


def get_init_inputs():
    return []
