import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.addmm -> F.elu.
    Input (batch_size, 8192), output (batch_size, 2048).
    """

    def __init__(self, in_features, out_features, alpha):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.alpha = alpha

    def forward(self, x):
        x = torch.addmm(self.bias, x, self.weight)
        x = F.elu(x, alpha=self.alpha)
        return x


batch_size = 13984
in_features = 8192
out_features = 2048
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [in_features, out_features, alpha]
