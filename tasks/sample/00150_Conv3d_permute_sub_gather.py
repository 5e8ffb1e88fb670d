import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Conv3d -> Tensor.permute -> operator.sub -> torch.gather.
    Input (batch_size, 3, 4, 64, 64), output (batch_size, 64, 32, 4, 64).
    """

    def __init__(self, padding, stride, kernel_size, out_channels, in_channels, subtract_value):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.subtract_value = subtract_value

    def forward(self, x, index):
        x = self.conv(x)
        x = x.permute(0, 4, 1, 2, 3).contiguous()
        x = x - self.subtract_value
        x = torch.gather(x, 1, index)
        return x


batch_size = 960
padding = 1
stride = 1
kernel_size = 3
out_channels = 32
in_channels = 3
subtract_value = 0.25


def get_inputs():
    return [torch.randn(batch_size, 3, 4, 64, 64), torch.randint(0, 64, (batch_size, 64, 32, 4, 64))]


def get_init_inputs():
    return [padding, stride, kernel_size, out_channels, in_channels, subtract_value]
