import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = self.ln.weight.numel()
        y = torch.empty_like(x)
        kernels.layer_norm_forward(x, self.ln.weight, self.ln.bias, y, x.numel() // cols, cols,
                                   float(self.ln.eps))
        return y
