import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: F.hardtanh -> torch.logsumexp -> torch.square -> F.leaky_relu -> torch.log.
    Input (batch_size, 8192), output (batch_size).
    """

    def __init__(self, hardtanh_bound, negative_slope, log_eps):
        super(Model, self).__init__()
        self.hardtanh_bound = hardtanh_bound
        self.negative_slope = negative_slope
        self.log_eps = log_eps

    def forward(self, x):
        x = F.hardtanh(x, min_val=-self.hardtanh_bound, max_val=self.hardtanh_bound)
        x = torch.logsumexp(x, dim=1, keepdim=False)
        x = torch.square(x)
        x = F.leaky_relu(x, negative_slope=self.negative_slope)
        x = torch.log(torch.abs(x) + self.log_eps)
        return x


batch_size = 131072
hardtanh_bound = 0.5
negative_slope = 0.1
log_eps = 1.0


def get_inputs():
    return [torch.randn(batch_size, 8192)]


def get_init_inputs():
    return [hardtanh_bound, negative_slope, log_eps]
