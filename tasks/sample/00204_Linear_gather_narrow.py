import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: nn.Linear -> torch.gather -> torch.narrow.
    Input (batch_size, 8192), output (batch_size, 256).
    """

    def __init__(self, out_features, in_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, index):
        x = self.linear(x)
        x = torch.gather(x, 1, index)
        x = torch.narrow(x, 1, 1, 256)
        return x


batch_size = 16080
out_features = 512
in_features = 8192


def get_inputs():
    return [torch.randn(batch_size, 8192), torch.randint(0, 512, (batch_size, 512))]


def get_init_inputs():
    return [out_features, in_features]
