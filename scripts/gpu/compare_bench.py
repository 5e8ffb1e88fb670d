#!/usr/bin/env python3
"""Speed of the harness's output comparison (gpu_bench/harness/compare.py tensor_stats) on one
large fp32 output: the all-finite fast path, and a chunk with one NaN (the full rules). Every
timed trial checked against the reference and every round's audit call run it, so on tasks with
GiB outputs it is most of a benchmark's untimed time.

    python3 scripts/gpu/compare_bench.py [--elements N] [--device cuda|cpu] [--repeats R]
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "gpu_bench", "harness"))
import compare  # noqa: E402


def timed(fn, device, repeats):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=1 << 28)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    r = torch.rand(a.elements, device=a.device)
    c = r + torch.randn(a.elements, device=a.device) * 1e-4
    c_nan = c.clone()
    c_nan[a.elements // 2] = float("nan")
    gb = a.elements * 4 * 2 / 1e9
    print("compare_bench: %s, %d fp32 elements (%.2f GB read per comparison), best of %d"
          % (torch.cuda.get_device_name() if a.device == "cuda" else "cpu", a.elements, gb,
             a.repeats))
    for name, cand in (("all finite (fast path)", c), ("one NaN (its chunk: full rules)", c_nan)):
        s, stats = timed(lambda: compare.tensor_stats(cand, r, 1e-2, 1e-2), a.device, a.repeats)
        print("  %-32s %8.1f ms  %6.1f GB/s of inputs  bad=%d max_abs=%.3g"
              % (name, s * 1e3, gb / s, stats["bad_count"], stats["max_abs"]))


if __name__ == "__main__":
    main()
