import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.sub -> torch.where -> nn.AvgPool3d.
    Input (batch_size, 3, 16, 16, 16), output (batch_size, 3, 8, 8, 8).
    """

    def __init__(self, subtract_value, negative_scale, pool_kernel_size):
        super(Model, self).__init__()
        self.subtract_value = subtract_value
        self.negative_scale = negative_scale
        self.avg_pool = nn.AvgPool3d(kernel_size=pool_kernel_size)

    def forward(self, x):
        x = x - self.subtract_value
        x = torch.where(x > 0, x, x * self.negative_scale)
        x = self.avg_pool(x)
        return x


batch_size = 48720
subtract_value = 0.5
negative_scale = 0.5
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, 3, 16, 16, 16)]


def get_init_inputs():
    return [subtract_value, negative_scale, pool_kernel_size]
