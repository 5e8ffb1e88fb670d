import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    """Hinge loss, t broadcast over the last dim."""

    def __init__(self):
        super(ModelNew, self).__init__()
        pass

    def forward(self, predictions, targets):
        rows, cols = predictions.shape
        acc = torch.empty(1, dtype=torch.float64, device=predictions.device)
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        kernels.hinge_loss(predictions, targets, acc, out, rows, cols)
        return out
