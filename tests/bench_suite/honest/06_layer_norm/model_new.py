import torch
import torch.nn as nn

import kernels

# Blocks per row for the statistics pass (16 rows x 64 parts = 1024 blocks on the task's shape).
PARTS = 64


class ModelNew(nn.Module):
    """LayerNorm with each row split over many blocks (kernels/layer_norm.cu)."""

    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        # Same submodule and parameter names as Model (ln.weight, ln.bias) for load_state_dict.
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = self.ln.weight.numel()
        rows = x.numel() // cols
        y = torch.empty_like(x)
        partials = torch.empty(rows * PARTS * 2, dtype=torch.float64, device=x.device)
        stats = torch.empty(rows * 2, dtype=torch.float32, device=x.device)
        kernels.layer_norm_forward(x, self.ln.weight, self.ln.bias, y, partials, stats,
                                   rows, cols, PARTS, float(self.ln.eps))
        return y
