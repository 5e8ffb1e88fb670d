import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """MSE loss in two fused passes."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, predictions, targets):
        partial = torch.empty(1024, dtype=torch.float64, device=predictions.device)
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        kernels.mse_loss(predictions, targets, partial, out, predictions.numel())
        return out
