"""Output comparison on the GPU: the statistics tolerance.py defines, computed with torch, and the
checks of one candidate output set against the reference's."""

import math

import torch

import guard
import tolerance


def untyped_storage(t):
    """A tensor's whole storage (torch 2: untyped_storage(); torch 1.13: storage().untyped())."""
    f = getattr(t, "untyped_storage", None)
    return f() if f is not None else t.storage().untyped()


def flatten_outputs(out):
    """A forward's result as a list: a tensor, or a tuple/list of tensors (one level)."""
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


# Elements compared at once: the statistics need a few temporaries of the compared width per
# element, so a 7 GiB fp32 output costs at most a few hundred MiB more instead of several copies
# of itself in float64 (which ran a 112x64x512x512 RMSNorm task out of memory on a 141 GB GPU).
CHUNK_ELEMENTS = 1 << 24


def _chunk_stats(c, r, atol, rtol, exact_bad):
    """(bad mask, |c - r| with NaN-vs-number as inf and NaN-vs-NaN as 0, both_nan) of one flat
    chunk; c and r are already in the compared width; exact_bad is the mask of an integer or
    bool chunk, compared in its own dtype (float64 cannot hold every int64)."""
    if exact_bad is not None:
        bad = exact_bad
    else:
        bad = ~torch.isclose(c, r, rtol=rtol, atol=atol, equal_nan=True)
    both_nan = torch.isnan(c) & torch.isnan(r)
    d = torch.where(c == r, torch.zeros_like(c), (c - r).abs())
    d = torch.where(torch.isnan(d) & ~both_nan, torch.full_like(d, float("inf")), d)
    d = torch.where(both_nan, torch.zeros_like(d), d)
    return bad, d, both_nan


def _finite_chunk(c, r, atol, rtol):
    """The statistics of one floating chunk in a few passes, valid only where every |c - r| is
    finite (then c and r are finite too, and isclose, the NaN and infinity rules and the masks of
    _chunk_stats all reduce to plain arithmetic). Returns the bad mask and one float64 tensor
    [max |c - r|, bad count, max relative error, ||r||, ||c - r||], read with a single sync; a
    max that is not finite means the chunk needs _chunk_stats."""
    d = (c - r).abs_()
    ra = r.abs()
    bad = d > ra.mul(rtol).add_(atol)  # isclose: |c - r| <= atol + rtol * |r|
    rel = d.div(ra).masked_fill_(ra == 0, 0)
    f64 = torch.float64
    return bad, torch.stack([d.max().to(f64), bad.sum().to(f64), rel.max().to(f64),
                             torch.linalg.vector_norm(r, dtype=f64),
                             torch.linalg.vector_norm(d, dtype=f64)])


def tensor_stats(cand, ref, atol, rtol, chunk=CHUNK_ELEMENTS):
    """tolerance.stats_from_lists, on the GPU, CHUNK_ELEMENTS at a time. cand and ref have the
    same shape and dtype. A floating chunk with no NaN or infinity in |cand - ref| (the usual
    case) takes _finite_chunk's few passes; the rest take _chunk_stats's full rules. The timed
    trials' output checks and every round's audit call compare whole outputs, so on tasks with
    GiB outputs this is most of a benchmark's non-timed time."""
    s = tolerance.empty_stats()
    s["numel"] = ref.numel()
    if ref.numel() == 0:
        return s
    exact = not ref.is_floating_point() and not ref.is_complex()
    wide = torch.float64 if exact or ref.dtype == torch.float64 else torch.float32
    cf = cand.reshape(-1)
    rf = ref.reshape(-1)
    diff_sq = 0.0
    ref_sq = 0.0
    max_abs = 0.0
    max_rel = 0.0
    bad_total = 0
    for lo in range(0, cf.numel(), chunk):
        n = min(chunk, cf.numel() - lo)
        c0 = cf.narrow(0, lo, n)
        r0 = rf.narrow(0, lo, n)
        c = c0.to(wide)
        r = r0.to(wide)
        if not exact:
            bad, v = _finite_chunk(c, r, atol, rtol)
            mx, count, rel, r_norm, d_norm = v.tolist()
            if math.isfinite(mx):
                count = int(count)
                if count and s["first_bad_index"] < 0:
                    s["first_bad_index"] = lo + int(torch.argmax(bad.to(torch.uint8)).item())
                bad_total += count
                max_abs = max(max_abs, mx)
                max_rel = max(max_rel, rel)
                ref_sq += r_norm * r_norm
                diff_sq += d_norm * d_norm
                continue
            del bad, v
        bad, d, both_nan = _chunk_stats(c, r, atol, rtol, (c0 != r0) if exact else None)
        count = int(bad.sum().item())
        if count and s["first_bad_index"] < 0:
            s["first_bad_index"] = lo + int(torch.argmax(bad.to(torch.uint8)).item())
        bad_total += count
        del bad
        max_abs = max(max_abs, float(d.max().item()))
        rel_ok = (r != 0) & torch.isfinite(r)
        ra = torch.where(rel_ok, r.abs(), torch.ones_like(r))
        max_rel = max(max_rel, float(torch.where(rel_ok, d / ra, torch.zeros_like(d)).max().item()))
        del ra, rel_ok
        finite_r = torch.isfinite(r)
        ref_sq += float(torch.where(finite_r, r, torch.zeros_like(r)).to(torch.float64).square()
                        .sum().item())
        diff_sq += float(torch.where(finite_r & ~both_nan, d, torch.zeros_like(d)).to(
            torch.float64).square().sum().item())
    s["bad_count"] = bad_total
    s["max_abs"] = max_abs
    s["max_rel"] = max_rel
    s["ref_norm"] = math.sqrt(ref_sq)
    s["diff_norm"] = math.sqrt(diff_sq)
    return s


def check_outputs(cand_out, ref_out, profile, device_index, tag):
    """The checks of one forward's outputs: structure, then tolerance and relative norm per
    output. Returns (checks, violations)."""
    checks = []
    violations = []
    cands = flatten_outputs(cand_out)
    refs = flatten_outputs(ref_out)
    problems = []
    if len(cands) != len(refs):
        problems.append("returned %d outputs, the reference %d" % (len(cands), len(refs)))
    else:
        for i, (c, r) in enumerate(zip(cands, refs)):
            if not isinstance(c, torch.Tensor):
                problems.append("output %d is a %s, not a tensor" % (i, type(c).__name__))
                continue
            ok, why = guard.is_plain_dense_cuda(c, device_index)
            if not ok:
                problems.append("output %d %s" % (i, why))
                if type(c) is not torch.Tensor:
                    violations.append({"rule": "tensor_subclass_output",
                                       "detail": "output %d %s" % (i, why)})
                continue
            if c.dtype != r.dtype:
                problems.append("output %d has dtype %s, the reference %s" % (i, c.dtype, r.dtype))
            if tuple(c.shape) != tuple(r.shape):
                problems.append("output %d has shape %s, the reference %s"
                                % (i, tuple(c.shape), tuple(r.shape)))
    checks.append({"name": "outputs" + tag, "passed": not problems,
                   "message": "; ".join(problems)})
    if problems:
        return checks, violations
    for i, (c, r) in enumerate(zip(cands, refs)):
        dt = dtype_name(r.dtype)
        atol, rtol = tolerance.tolerance_for(profile, dt)
        s = tensor_stats(c, r, atol, rtol)
        suffix = tag if len(refs) == 1 else tag[:-1] + ",out=%d]" % i
        for name, passed, message in tolerance.judge(s, atol, rtol,
                                                     tolerance.rel_norm_limit(profile, dt)):
            checks.append({"name": name + suffix, "passed": passed,
                           "max_abs_error": s["max_abs"], "max_rel_error": s["max_rel"],
                           "first_mismatch_index": s["first_bad_index"] if name == "tolerance"
                           else -1,
                           "message": message})
    return checks, violations


def same_bits(a, b):
    """Whether two tensors hold exactly the same bytes (NaNs included)."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    if a.numel() == 0:
        return True
    a = a.contiguous().reshape(-1)
    b = b.contiguous().reshape(-1)
    if a.dtype == torch.bool:
        return bool(torch.equal(a, b))
    return bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))
