import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.einsum -> torch.add -> F.smooth_l1_loss.
    Input (batch_size, 128, 1024), output a scalar.
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x, y, target):
        x = torch.einsum("bij,jk->bik", x, self.weight)
        x = torch.add(x, y)
        x = F.smooth_l1_loss(x, target)
        return x


batch_size = 752
in_features = 1024
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, 128, 1024), torch.randn(batch_size, 128, 2048), torch.randn(batch_size, 128, 2048)]


def get_init_inputs():
    return [in_features, out_features]
