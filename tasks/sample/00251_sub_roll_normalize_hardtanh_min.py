import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: operator.sub -> torch.roll -> F.normalize -> F.hardtanh -> torch.min.
    Input (batch_size, 4096), output (batch_size, 1).
    """

    def __init__(self, subtract_value, hardtanh_bound):
        super(Model, self).__init__()
        self.subtract_value = subtract_value
        self.hardtanh_bound = hardtanh_bound

    def forward(self, x):
        x = x - self.subtract_value
        x = torch.roll(x, shifts=1, dims=1)
        x = F.normalize(x, p=2.0, dim=1)
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        x = torch.min(x, dim=1, keepdim=True)[0]
        return x


batch_size = 136752
subtract_value = 0.25
hardtanh_bound = 1.0


def get_inputs():
    return [torch.randn(batch_size, 4096)]


def get_init_inputs():
    return [subtract_value, hardtanh_bound]
