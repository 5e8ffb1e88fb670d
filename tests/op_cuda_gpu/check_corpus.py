#!/usr/bin/env python3
"""Runs seed-corpus solutions (rollout/seed_corpus.h) on a GPU against their task (issue 25).

  python3 tests/op_cuda_gpu/check_corpus.py CORPUS.jsonl [--limit N]

For every transcript that should build (expected_compile_only +1) it replays the final workspace
(the write_file calls, then the edit_file calls), builds kernels/*.cu with nvcc into a shared
library, gives model_new.py a `kernels` module that calls each extern "C" launcher through ctypes
(tensors as pointers, Python ints as long long, the current stream appended, as the bench harness
does), and compares ModelNew with Model on get_inputs() (rtol 1e-4, atol 1e-5). It is a
correctness check only (the bench's tiers need cuda-agent bench); it exits 1 if any differs.
Without torch or a GPU it prints "[  SKIPPED ]" and exits 0.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import types


def median_ms(fn, inputs, n=50):
    import torch
    for _ in range(5):
        fn(*inputs)
    times = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*inputs)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[n // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("--time", action="store_true",
                    help="also time eager, torch.compile and ModelNew (CUDA events, median of 50;"
                         " an indication only: the bench flushes L2 and interleaves)")
    a = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no GPU")
    except Exception as e:
        print("[  SKIPPED ] corpus check: %s" % e)
        return 0
    arch = "sm_%d%d" % torch.cuda.get_device_capability()
    failed = checked = 0
    for line in open(a.corpus):
        t = json.loads(line)
        if t["expected_compile_only"] != 1:
            continue
        if checked >= a.limit:
            break
        checked += 1
        files = {}
        for m in t["messages"]:
            for c in m.get("tool_calls", []):
                args = c["arguments"]
                if c["name"] == "write_file":
                    files[args["path"]] = args["content"]
                elif c["name"] == "edit_file":
                    files[args["path"]] = files[args["path"]].replace(args["old"], args["new"], 1)
        work = tempfile.mkdtemp(prefix="corpus_")
        cus = []
        for path, text in files.items():
            full = os.path.join(work, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            open(full, "w").write(text)
            if path.endswith(".cu"):
                cus.append(full)
        so = os.path.join(work, "k.so")
        b = subprocess.run([a.nvcc, "-O3", "-shared", "-Xcompiler", "-fPIC", "-arch=" + arch,
                            "-o", so] + cus, capture_output=True, text=True)
        if b.returncode:
            print("FAIL %s %s: does not build\n%s" % (t["task"], t["style"], b.stderr[:2000]))
            failed += 1
            continue
        lib = ctypes.CDLL(so)
        kernels = types.ModuleType("kernels")

        def launcher(name):
            fn = getattr(lib, name)

            def call(*args):
                conv = []
                for x in args:
                    if isinstance(x, torch.Tensor):
                        conv.append(ctypes.c_void_p(x.data_ptr()))
                    elif isinstance(x, float):
                        conv.append(ctypes.c_float(x))
                    else:
                        conv.append(ctypes.c_longlong(x))
                conv.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
                fn(*conv)
            return call
        sys.modules["kernels"] = kernels
        ns_task, ns_new = {}, {}
        exec(t["task_py"], ns_task)
        # every extern "C" name in the .cu files becomes a launcher
        for path, text in files.items():
            for name in re.findall(r'extern "C" void (\w+)\(', text):
                setattr(kernels, name, launcher(name))
        exec(files["model_new.py"], ns_new)
        torch.manual_seed(0)
        init = ns_task["get_init_inputs"]()
        inputs = [x.cuda() for x in ns_task["get_inputs"]()]
        ref = ns_task["Model"](*init).cuda()(*inputs)
        out = ns_new["ModelNew"](*init).cuda()(*inputs)
        torch.cuda.synchronize()
        try:
            torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5, equal_nan=True)
            extra = ""
            if a.time:
                model = ns_task["Model"](*init).cuda()
                new = ns_new["ModelNew"](*init).cuda()
                ms = [median_ms(f, inputs) for f in (model, torch.compile(model), new)]
                extra = "  eager %.3f ms, compile %.3f ms, new %.3f ms: x%.2f eager, x%.2f compile" % (
                    ms[0], ms[1], ms[2], ms[0] / ms[2], ms[1] / ms[2])
            print("ok   %-40s %-16s tier %d%s" % (t["task"], t["style"], t["expected_tier"], extra))
        except AssertionError as e:
            failed += 1
            print("FAIL %-40s %-16s %s" % (t["task"], t["style"], str(e).splitlines()[0:3]))
    print("%d/%d corpus solutions match their task" % (checked - failed, checked))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
