import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """RMS norm over dim 1 of (batch, features, *)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        y = torch.empty_like(x)
        spatial = x.numel() // (x.shape[0] * x.shape[1])
        kernels.rms_norm_launch(x, y, x.shape[0], x.shape[1], spatial, self.eps)
        return y
