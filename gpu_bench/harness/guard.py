"""The runtime op allow-list: ModelNew.forward runs under a TorchDispatchMode that lets through
tensor creation, views and metadata, and stops on anything that computes (DESIGN.md section 5).

It sits at the dispatcher, below every Python entry point (torch.*, Tensor methods,
torch.nn.functional, operators), so no spelling of an op escapes it, and it patches nothing.
Composite ops arrive already decomposed: `reshape` of a viewable tensor arrives as `view` (allowed),
of a non-viewable one as a copy (refused); `contiguous()` of a contiguous tensor dispatches
nothing, of another one a `clone` (refused).

A refused op raises GuardStop, which derives from BaseException so that `except Exception` in
model_new.py does not swallow it (policy.py refuses broader handlers), and is also recorded in
`violations`, which the harness reads whatever the forward did with the exception.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Overload packets (aten.<name>) that are allowed, by what they do.
CREATION = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like",
    "new_full", "scalar_tensor",
    # initialising a tensor the candidate made (same as zeros/full at creation)
    "zero_", "fill_",
}  # fmt: skip
VIEWS = {
    "view", "_unsafe_view", "_reshape_alias", "as_strided", "permute", "transpose", "t",
    "expand", "slice", "select", "unsqueeze", "squeeze", "detach", "alias", "diagonal",
    "unfold", "split", "split_with_sizes", "chunk", "unbind", "narrow", "view_as_real",
    "view_as_complex", "unflatten", "flatten", "movedim", "lift_fresh", "real", "imag",
}  # fmt: skip
METADATA = {
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride", "numel",
    "dim", "is_contiguous", "is_non_overlapping_and_dense", "is_same_size", "is_strides_like_format",
    "_has_compatible_shallow_copy_type", "_nested_tensor_size", "device", "layout",
}  # fmt: skip
ALLOWED = frozenset(CREATION | VIEWS | METADATA)

# Overloads of allowed packets that are refused anyway: fill_ from a tensor reads data.
REFUSED_OVERLOADS = frozenset({"fill_.Tensor"})


class GuardStop(BaseException):
    """Raised inside ModelNew.forward when it calls an op outside the allow-list."""


def _op_name(func):
    packet = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
    overload = getattr(func, "_overloadname", "default")
    return packet, "%s.%s" % (packet, overload)


class OpGuard(TorchDispatchMode):
    """Use as `with OpGuard() as g: out = model(*inputs)`; then read g.violations."""

    def __init__(self):
        super().__init__()
        self.violations = []  # [{"rule": "forbidden_op", "detail": ...}]
        self.ops_seen = {}  # op name -> count (for the report)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet, full = _op_name(func)
        self.ops_seen[full] = self.ops_seen.get(full, 0) + 1
        namespace = getattr(func, "namespace", "aten")
        if namespace in ("aten", "prim") and packet in ALLOWED and full not in REFUSED_OVERLOADS:
            return func(*args, **kwargs)
        detail = ("%s::%s called in ModelNew.forward: forward may only create tensors, take views"
                  " and call kernels.* launchers" % (namespace, full))
        if len(self.violations) < 20:
            self.violations.append({"rule": "forbidden_op", "detail": detail})
        raise GuardStop(detail)


def is_plain_dense_cuda(t, device_index):
    """(ok, why) for one output tensor: exactly torch.Tensor, strided, on the GPU, non-overlapping
    and dense (every element has its own address and the storage has no gaps)."""
    if type(t) is not torch.Tensor:
        return False, "is a %s, not a plain torch.Tensor" % type(t).__name__
    if t.layout != torch.strided:
        return False, "has layout %s, not strided" % t.layout
    if not t.is_cuda or t.device.index != device_index:
        return False, "is on %s, not cuda:%d" % (t.device, device_index)
    if t.is_quantized or t.is_meta or t.is_neg() or t.is_conj():
        return False, "is quantized, meta, or carries a lazy neg/conj bit"
    # Dense: sorted by stride, each stride is the product of the smaller dims' sizes.
    dims = sorted((s, n) for s, n in zip(t.stride(), t.shape) if n != 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False, ("is not dense (strides %s for shape %s)"
                           % (tuple(t.stride()), tuple(t.shape)))
        expected *= size
    return True, ""
