import torch
import torch.nn as nn


class Model(nn.Module):
    """A task whose output ignores its inputs and its weights alike: the softmax over a single
    logit is 1 whatever the logit (written for the attack suite; KernelBench level 3's
    45_UNetSoftmax-like degenerate cases are what it stands for)."""

    def __init__(self, in_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, 1)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=-1)


batch_size = 4096
in_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features]
