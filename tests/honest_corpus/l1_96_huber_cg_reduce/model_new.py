import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Smooth L1 (Huber, beta 1) loss."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, predictions, targets):
        acc = torch.empty(1, dtype=torch.float64, device=predictions.device)
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        kernels.huber_loss(predictions, targets, acc, out, predictions.numel())
        return out
