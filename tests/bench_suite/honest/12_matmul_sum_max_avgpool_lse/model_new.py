import torch
import torch.nn as nn

import kernels

# Row chunks of the weight's column sum (32 x 32 = 1024 blocks on the task's 8192 x 8192).
CHUNKS = 32


class ModelNew(nn.Module):
    """sum(linear(x), dim=1) == x @ w.sum(0) + b.sum(), and max / mean / logsumexp over a
    size-1 dimension are the identity: a column sum of the weight and a GEMV
    (kernels/linear_sum.cu) instead of the GEMM."""

    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        # Same names as Model (linear.weight, linear.bias) so load_state_dict copies them.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        batch, in_features = x.shape
        out_features = self.linear.weight.shape[0]
        out = torch.empty(batch, 1, dtype=x.dtype, device=x.device)
        partials = torch.empty(CHUNKS * in_features, dtype=x.dtype, device=x.device)
        wsum = torch.empty(in_features, dtype=x.dtype, device=x.device)
        bsum = torch.empty(1, dtype=x.dtype, device=x.device)
        kernels.linear_sum_forward(x, self.linear.weight, self.linear.bias, out, partials, wsum,
                                   bsum, batch, in_features, out_features, CHUNKS)
        return out
