import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """RMS norm over dim 1 in one pass (kernels/rms_norm.cu)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        batch, channels = x.shape[0], x.shape[1]
        inner = x.numel() // (batch * channels)
        kernels.rms_norm_forward(x, y, batch, channels, inner, float(self.eps))
        return y
