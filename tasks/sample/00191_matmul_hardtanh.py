import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> F.hardtanh.
    Input (batch_size, 8, 64, 1024), output (batch_size, 8, 64, 512).
    """

    def __init__(self, in_features, out_features, hardtanh_bound):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.hardtanh_bound = hardtanh_bound

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        return x


batch_size = 848
in_features = 1024
out_features = 512
hardtanh_bound = 1.0


def get_inputs():
    return [torch.randn(batch_size, 8, 64, 1024)]


def get_init_inputs():
    return [in_features, out_features, hardtanh_bound]
