import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv2d -> F.celu -> torch.relu.
    Input (batch_size, 3, 16, 128), output (batch_size, 16, 8, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, alpha):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.alpha = alpha

    def forward(self, x):
        x = self.conv(x)
        x = F.celu(x, alpha=self.alpha)
        x = torch.relu(x)
        return x


batch_size = 131072
padding = 0
stride = 2
kernel_size = 1
out_channels = 16
in_channels = 3
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 128)]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, alpha]
