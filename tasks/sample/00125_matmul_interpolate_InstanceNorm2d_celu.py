import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Synthesized fused-operator task: torch.matmul -> F.interpolate -> nn.InstanceNorm2d -> F.celu.
    Input (batch_size, 16, 128, 256), output (batch_size, 16, 256, 512).
    """

    def __init__(self, in_features, out_features, num_features, alpha):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.instance_norm = nn.InstanceNorm2d(num_features)
        self.alpha = alpha

    def forward(self, x):
        x = torch.matmul(x, self.weight) + self.bias
        x = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        x = self.instance_norm(x)
        x = F.celu(x, alpha=self.alpha)
        return x


batch_size = 352
in_features = 256
out_features = 256
num_features = 16
alpha = 2.0


def get_inputs():
    return [torch.randn(batch_size, 16, 128, 256)]


def get_init_inputs():
    return [in_features, out_features, num_features, alpha]
