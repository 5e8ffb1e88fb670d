"""Tolerance profiles and the pass/fail rule of one output comparison (DESIGN.md section 5).

Standard library only, so it is unit-tested without torch (tests/test_tolerance.py). The harness
computes the statistics on the GPU with torch (compare.py); `stats_from_lists` below is the same
definition in plain Python, and the tests hold the two to it.

An element is close when both values are NaN, or they are equal (infinities included), or
|c - r| <= atol + rtol * |r| (torch.isclose with equal_nan). An output passes the tolerance check
when every element is close, and the relative-norm check when ||c - r||_2 / ||r||_2 is at most
the profile's limit (skipped when ||r||_2 is 0). The second check is what stops an all-zero (or
scaled-down) output from passing on a reference whose values all sit inside atol: zeros give a
relative norm of exactly 1.
"""

import math

# (atol, rtol) per dtype name ("float32", ...); "*" is every floating dtype not listed.
PROFILES = {
    # CUDA Agent's: atol = rtol = 1e-2 for every dtype.
    "cuda-agent": {"*": (1e-2, 1e-2)},
    # KernelBench's current: 1e-4 for fp32 (and fp64), 1e-2 for the half types.
    "strict": {
        "float64": (1e-4, 1e-4),
        "float32": (1e-4, 1e-4),
        "float16": (1e-2, 1e-2),
        "bfloat16": (1e-2, 1e-2),
        "*": (1e-4, 1e-4),
    },
}

# Integer and bool outputs must match exactly in every profile.
EXACT_DTYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)

# The relative-norm limit is this many times the profile's rtol, capped at REL_NORM_CAP: honest
# rounding (fp32 ~1e-6, bf16 with fp32 accumulation ~4e-3) sits far below it, with headroom for
# cancellation; an output that is off by more than 5% in norm fails whatever its magnitude.
REL_NORM_FACTOR = 5.0
REL_NORM_CAP = 0.05


def tolerance_for(profile, dtype):
    """(atol, rtol) of `dtype` (a name such as "float32") under `profile`. ValueError if unknown."""
    if profile not in PROFILES:
        raise ValueError("unknown tolerance profile '%s' (known: %s)"
                         % (profile, ", ".join(sorted(PROFILES))))
    if dtype in EXACT_DTYPES:
        return (0.0, 0.0)
    table = PROFILES[profile]
    return table.get(dtype, table["*"])


def rel_norm_limit(profile, dtype):
    """Largest ||c - r|| / ||r|| that passes; 0 for exact dtypes."""
    _, rtol = tolerance_for(profile, dtype)
    return min(REL_NORM_FACTOR * rtol, REL_NORM_CAP)


def empty_stats():
    return {
        "numel": 0,
        "bad_count": 0,
        "first_bad_index": -1,
        "max_abs": 0.0,
        "max_rel": 0.0,
        "diff_norm": 0.0,
        "ref_norm": 0.0,
    }


def is_close(c, r, atol, rtol):
    if math.isnan(c) or math.isnan(r):
        return math.isnan(c) and math.isnan(r)
    if c == r:
        return True
    if math.isinf(c) or math.isinf(r):
        return False
    return abs(c - r) <= atol + rtol * abs(r)


def stats_from_lists(cand, ref, atol, rtol):
    """The statistics of one comparison of two flat sequences of numbers (the definition)."""
    s = empty_stats()
    s["numel"] = len(ref)
    diff_sq = 0.0
    ref_sq = 0.0
    for i, (c, r) in enumerate(zip(cand, ref)):
        c = float(c)
        r = float(r)
        if not is_close(c, r, atol, rtol):
            s["bad_count"] += 1
            if s["first_bad_index"] < 0:
                s["first_bad_index"] = i
        if math.isnan(c) and math.isnan(r):
            continue
        d = abs(c - r) if not (c == r) else 0.0
        if math.isnan(d):
            d = math.inf
        s["max_abs"] = max(s["max_abs"], d)
        if r != 0 and not math.isinf(r):
            s["max_rel"] = max(s["max_rel"], d / abs(r))
        if math.isfinite(r):
            ref_sq += r * r
            diff_sq += d * d if math.isfinite(d) else math.inf
    s["diff_norm"] = math.sqrt(diff_sq)
    s["ref_norm"] = math.sqrt(ref_sq)
    return s


def rel_norm(stats):
    """||c - r|| / ||r||, or None when ||r|| is 0 (the check does not apply)."""
    if stats["ref_norm"] == 0:
        return None
    return stats["diff_norm"] / stats["ref_norm"]


def judge(stats, atol, rtol, norm_limit):
    """Pass/fail of one output: [(check, passed, message)] for "tolerance" and "rel_norm"."""
    out = []
    n = stats["numel"]
    if stats["bad_count"] == 0:
        out.append(("tolerance", True, ""))
    else:
        out.append(("tolerance", False,
                    "%d of %d elements out of tolerance (atol=%g rtol=%g); first at flat index %d;"
                    " max abs error %.4g, max rel error %.4g"
                    % (stats["bad_count"], n, atol, rtol, stats["first_bad_index"],
                       stats["max_abs"], stats["max_rel"])))
    rn = rel_norm(stats)
    if rn is None:
        out.append(("rel_norm", True, "reference is all zeros: relative norm not applicable"))
    elif rn <= norm_limit:
        out.append(("rel_norm", True, ""))
    else:
        out.append(("rel_norm", False,
                    "||out - ref|| / ||ref|| = %.4g exceeds %g (||ref|| = %.4g): an output that"
                    " is off in norm fails even when every element is inside atol"
                    % (rn, norm_limit, stats["ref_norm"])))
    return out
