import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.softmax -> torch.transpose -> Tensor.permute -> torch.var -> torch.log_softmax.
    Input (batch_size, 3, 4, 16, 16), output (batch_size, 16, 16, 3, 1).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x = torch.softmax(x, dim=4)
        x = torch.transpose(x, 3, 4).contiguous()
        x = x.permute(0, 3, 4, 1, 2).contiguous()
        x = torch.var(x, dim=4, keepdim=True)
        x = torch.log_softmax(x, dim=1)
        return x


batch_size = 96464


def get_inputs():
    return [torch.randn(batch_size, 3, 4, 16, 16)]


def get_init_inputs():
    return []
