import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.LayerNorm -> torch.clamp -> F.hardtanh.
    Input (batch_size, 3, 8, 32, 32), output (batch_size, 3, 8, 32, 32).
    """

    def __init__(self, normalized_shape, clamp_bound, hardtanh_bound):
        super(Model, self).__init__()
        self.layer_norm = nn.LayerNorm(normalized_shape)
        self.clamp_bound = clamp_bound
        self.hardtanh_bound = hardtanh_bound

    def forward(self, x):
        x = self.layer_norm(x)
        x = torch.clamp(x, min=-self.clamp_bound, max=self.clamp_bound)
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        return x


batch_size = 19920
normalized_shape = 32
clamp_bound = 0.5
hardtanh_bound = 2.0


def get_inputs():
    return [torch.randn(batch_size, 3, 8, 32, 32)]


def get_init_inputs():
    return [normalized_shape, clamp_bound, hardtanh_bound]
