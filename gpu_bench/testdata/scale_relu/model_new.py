import torch, torch.nn as nn
import kernels
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        y = torch.empty_like(x)
        kernels.scale_relu_launch(x, y, x.numel())
        return y
