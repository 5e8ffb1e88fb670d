import torch
import torch.nn as nn

import kernels


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions, targets):
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        kernels.mse_forward(predictions, targets, out, predictions.numel())
        return out
