import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> F.hardtanh.
    Input (batch_size, 8, 8, 64, 64), output (batch_size, 8, 8, 64, 64).
    """

    def __init__(self, normalized_shape, hardtanh_bound):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.hardtanh_bound = hardtanh_bound

    def forward(self, x):
        x = self.layer_norm(x)
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        return x


batch_size = 1136
normalized_shape = 64
hardtanh_bound = 1.0


def get_inputs():
    return [torch.randn(batch_size, 8, 8, 64, 64)]


def get_init_inputs():
    return [normalized_shape, hardtanh_bound]
