import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.log -> Tensor.view.
    Input (batch_size, 1024), output (batch_size, 512, 2).
    """

    def __init__(self, log_eps):
        super(Model, self).__init__()
        self.log_eps = log_eps

    def forward(self, x):
        x = torch.log(torch.abs(x) + self.log_eps)
        x = x.view(x.size(0), 512, 2)
        return x


batch_size = 657968
log_eps = 1.0


def get_inputs():
    return [torch.randn(batch_size, 1024)]


def get_init_inputs():
    return [log_eps]
