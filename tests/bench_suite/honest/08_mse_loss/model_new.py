import torch
import torch.nn as nn

import kernels

# Blocks of the first reduction stage (8 per SM on a 132-SM H200; any count works).
BLOCKS = 1056


class ModelNew(nn.Module):
    """Mean squared error in one fused pass (kernels/mse.cu)."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        partials = torch.empty(BLOCKS, dtype=torch.float64, device=predictions.device)
        kernels.mse_forward(predictions, targets, partials, out, predictions.numel(), BLOCKS)
        return out
