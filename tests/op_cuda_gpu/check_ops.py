#!/usr/bin/env python3
"""Checks tasks/op_cuda.h's CUDA expressions against torch on a GPU (issue 25).

  python3 tests/op_cuda_gpu/check_ops.py CASES.json [--workdir DIR]

CASES.json (written by tasks/op_cuda_gpu_test.cpp) is a list of
  {"op": "F.elu", "param_name": "alpha", "param": "0.5", "line": "x = F.elu(x, alpha=self.alpha)",
   "input": "y" or "", "expr": "(v > 0.f ? v : expm1f(v) * 0.5f)"}
where `line` is the catalogue's own forward statement for the op. Every case becomes one kernel
(out[i] = expr of v = x[i] and w = y[i]); all are built with one nvcc call into a shared library,
run through ctypes on the same random inputs as the torch line, and compared with
torch.testing.assert_close (rtol 1e-5, atol 1e-6, NaN equal to NaN). Prints one line per case and
exits 1 if any differs. Without torch or a GPU it prints "[  SKIPPED ]" and exits 0.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import types


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # no torch, or no GPU
        print("[  SKIPPED ] op_cuda check: %s" % e)
        return 0
    cases = json.load(open(a.cases))
    work = a.workdir or tempfile.mkdtemp(prefix="op_cuda_")
    src = ["#include <cuda_runtime.h>"]
    for i, c in enumerate(cases):
        src.append(
            "__global__ void k%d(const float* x, const float* y, float* out, long long n) {\n"
            "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            "  if (i < n) { float v = x[i]; float w = y[i]; (void)w; out[i] = %s; }\n}\n"
            "extern \"C\" void launch%d(const float* x, const float* y, float* out, long long n) {\n"
            "  k%d<<<(unsigned)((n + 255) / 256), 256>>>(x, y, out, n);\n}\n"
            % (i, c["expr"], i, i))
    cu = os.path.join(work, "ops.cu")
    so = os.path.join(work, "ops.so")
    with open(cu, "w") as f:
        f.write("\n".join(src))
    cap = torch.cuda.get_device_capability()
    arch = "sm_%d%d" % cap
    build = subprocess.run([a.nvcc, "-O3", "-shared", "-Xcompiler", "-fPIC", "-arch=" + arch,
                            "-o", so, cu], capture_output=True, text=True)
    if build.returncode != 0:
        print(build.stdout + build.stderr)
        print("FAIL: nvcc could not build the cases")
        return 1
    lib = ctypes.CDLL(so)
    torch.manual_seed(0)
    n = 1 << 16
    x = torch.randn(n, device="cuda") * 3
    special = torch.tensor([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 0.125, 20.0, -20.0, 10.5, 25.0,
                            -25.0], device="cuda")
    x[: special.numel()] = special
    y = torch.randn(n, device="cuda")
    failed = 0
    for i, c in enumerate(cases):
        out = torch.empty_like(x)
        fn = getattr(lib, "launch%d" % i)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
        fn(x.data_ptr(), y.data_ptr(), out.data_ptr(), n)
        torch.cuda.synchronize()
        ns = {"torch": torch, "F": F, "x": x.clone(), "self": types.SimpleNamespace()}
        if c["input"]:
            ns[c["input"]] = y
        if c["param_name"]:
            setattr(ns["self"], c["param_name"], eval(c["param"]))
            ns[c["param_name"]] = eval(c["param"])
        exec(c["line"], ns)
        ref = ns["x"]
        label = "%s(%s)" % (c["op"], c["param"])
        try:
            torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
            print("ok   %-28s %s" % (label, c["expr"]))
        except AssertionError as e:
            failed += 1
            bad = (~torch.isclose(out, ref, rtol=1e-5, atol=1e-6, equal_nan=True)).nonzero()
            k = int(bad[0]) if bad.numel() else 0
            print("FAIL %-28s %s: x=%r got %r torch %r (%d elements differ)\n  %s"
                  % (label, c["expr"], float(x[k]), float(out[k]), float(ref[k]), bad.numel(),
                     str(e).splitlines()[0]))
    print("%d/%d cases match torch" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
