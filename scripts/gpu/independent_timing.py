#!/usr/bin/env python3
"""The independent half of scripts/gpu/timing_agreement.py (issue 28 item 3), in its own process:

    python3 scripts/gpu/independent_timing.py SPEC.json OUT.jsonl

SPEC: {"entries": [{"name", "dir" (model_new.py, kernels/), "task" (model.py), "so" and
"prototypes" (the bench's kept artifact and launchers; without them the sources are built with
nvcc)}], "empty_so" (or null), "trials", "cuda_home", "nvcc", "arch", "work"}. One JSON line per
entry is appended to OUT as soon as it is measured (a "kind": "env" line first, a "fatal" one when
there is no PyTorch on a GPU), so that the parent keeps what was done if this process dies.

Per entry, sharing no code with the harness: the entry's shared object loaded with plain ctypes
(tensors become data_ptr(), no checks), the task's Model and the entry's ModelNew on the task's
inputs, outputs compared (measure_honest.compare), then alternating eager / kernel trials:
  covered  synchronise, L2 flush (zero max(4 x L2, 64 MiB)), start event, forward, end event,
           synchronise: the host's time to the first launch passes while the flush runs;
  synced   the same with a synchronise after the flush: that host time counts (KernelBench's way);
  host     the host time of the forward call (in the covered trials).

Then, with "empty_so", the launcher micro-benchmark: the harness's own `kernels` module
(gpu_bench/harness/launchers.py, imported on purpose) against a bare ctypes call, per call.
"""

import ctypes
import gc
import importlib.util
import json
import os
import re
import statistics
import sys
import time
import traceback
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS_DIR = os.path.join(REPO, "gpu_bench", "harness")
EMPTY_PARAMS = [{"name": "x", "c_type": "const float*", "kind": "pointer"},
                {"name": "y", "c_type": "float*", "kind": "pointer"},
                {"name": "n", "c_type": "long long", "kind": "integer"},
                {"name": "stream", "c_type": "cudaStream_t", "kind": "stream"}]


def log(msg):
    print("[independent %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def load_measure_honest():
    """scripts/gpu/measure_honest.py: library loading, the nvcc build, the output comparison."""
    spec = importlib.util.spec_from_file_location(
        "measure_honest", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "measure_honest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain_kernels(torch, mh, so_path, prototypes, cuda_home):
    """A `kernels` module of bare ctypes calls: tensors become data_ptr(), no checks."""
    lib = mh.load_library(so_path, cuda_home)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    index = torch.cuda.current_device()
    module = types.ModuleType("kernels")
    for proto in prototypes:
        fn = getattr(lib, proto["name"])
        argtypes, kinds = [], []
        for p in proto["params"]:
            base = mh.base_type(p["c_type"])
            if p["kind"] in ("pointer", "stream"):
                argtypes.append(ctypes.c_void_p)
            elif p["kind"] == "floating":
                argtypes.append(ctypes.c_double if base == "double" else ctypes.c_float)
            else:
                argtypes.append(mh.INTEGER_CTYPES.get(base, ctypes.c_int64))
            if p["kind"] != "stream":
                kinds.append(p["kind"])
        fn.argtypes = argtypes
        fn.restype = None
        has_stream = bool(proto["params"]) and proto["params"][-1]["kind"] == "stream"

        def launcher(*a, fn=fn, kinds=tuple(kinds), has_stream=has_stream):
            values = [x.data_ptr() if k == "pointer" else (float(x) if k == "floating" else x)
                      for k, x in zip(kinds, a)]
            if has_stream:
                values.append(raw_stream(index) if raw_stream
                              else torch.cuda.current_stream().cuda_stream)
            fn(*values)
        setattr(module, proto["name"], launcher)
    module.keep = lib
    return module


def flush_bytes(torch):
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20) or 50 << 20)
    return max(4 * l2, 64 << 20)


def measure_entry(torch, mh, e, spec):
    if e.get("so") and e.get("prototypes"):
        so, prototypes = e["so"], e["prototypes"]
    else:  # the bench kept no job: build the same sources with nvcc
        so, prototypes, _ = mh.build_with_nvcc(spec["nvcc"], e["dir"], spec["work"],
                                               e["name"].replace("^", "p"), spec["arch"])
    sys.modules["kernels"] = plain_kernels(torch, mh, so, prototypes, spec["cuda_home"])
    tag = re.sub(r"\W", "_", e["name"])
    task = mh.load_module(e["task"], "task_" + tag)
    new = mh.load_module(os.path.join(e["dir"], "model_new.py"), "model_new_" + tag)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    with dev:
        init = mh.to_cuda(torch, task.get_init_inputs())
        model = task.Model(*init).to(dev).eval()
        model_new = new.ModelNew(*init).to(dev).eval()
    model_new.load_state_dict(model.state_dict())
    torch.manual_seed(1)
    with dev:
        inputs = mh.to_cuda(torch, task.get_inputs())
    row = {"name": e["name"]}
    with torch.no_grad():
        check = mh.compare(torch, model(*inputs), model_new(*inputs))
        torch.cuda.synchronize()
        if not check["ok"]:
            raise RuntimeError("independent: wrong output: %s" % check.get("reason"))
        flush = torch.empty(flush_bytes(torch) // 4, dtype=torch.int32, device=dev)
        fns = {"eager": lambda: model(*inputs), "kernel": lambda: model_new(*inputs)}
        for _ in range(5):
            for fn in fns.values():
                fn()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        covered = {k: [] for k in fns}
        synced = {k: [] for k in fns}
        host = {k: [] for k in fns}
        for trial in range(int(spec["trials"])):
            order = list(fns) if trial % 2 == 0 else list(fns)[::-1]
            for which in order:
                torch.cuda.synchronize()
                flush.zero_()
                start.record()
                h0 = time.perf_counter()
                o = fns[which]()
                h1 = time.perf_counter()
                end.record()
                torch.cuda.synchronize()
                covered[which].append(start.elapsed_time(end) * 1000.0)
                host[which].append((h1 - h0) * 1e6)
                del o
            for which in order:
                flush.zero_()
                torch.cuda.synchronize()
                start.record()
                o = fns[which]()
                end.record()
                torch.cuda.synchronize()
                synced[which].append(start.elapsed_time(end) * 1000.0)
                del o
        del flush
    med = {k: {v: statistics.median(d[v]) for v in d} for k, d in
           (("covered", covered), ("synced", synced), ("host", host))}
    row.update({
        "kernel_us": med["covered"]["kernel"], "eager_us": med["covered"]["eager"],
        "indep_speedup": med["covered"]["eager"] / med["covered"]["kernel"],
        "synced_kernel_us": med["synced"]["kernel"], "synced_eager_us": med["synced"]["eager"],
        "synced_speedup": med["synced"]["eager"] / med["synced"]["kernel"],
        "host_us": med["host"], "max_abs_err": check.get("max_abs_err"),
        "cv": {k: statistics.pstdev(v) / statistics.fmean(v) for k, v in covered.items()},
    })
    del model, model_new, inputs
    sys.modules.pop("kernels", None)
    return row


def per_call_us(fn, calls, reps=5, sync=None, batch=200):
    """Median over reps of the host time per call (us); with `sync`, a device synchronise after
    every `batch` calls, outside the clock, so that queued launches never fill the queue."""
    best = []
    for _ in range(reps):
        total = 0.0
        left = calls
        while left > 0:
            n = min(batch, left)
            t = time.perf_counter()
            for _ in range(n):
                fn()
            total += time.perf_counter() - t
            left -= n
            if sync:
                sync()
        best.append(total / calls * 1e6)
    return statistics.median(best)


def launcher_benchmark(torch, mh, so_path, cuda_home, calls=20000):
    """The harness's launcher path against a bare ctypes call (see the module comment)."""
    lib = mh.load_library(so_path, cuda_home)  # libcudart found as for the entries
    sys.path.insert(0, HARNESS_DIR)
    import device as harness_device  # noqa: PLC0415 (the harness's own modules, on purpose)
    import launchers as harness_launchers  # noqa: PLC0415

    index = torch.cuda.current_device()
    cudart = harness_device.load_cudart()
    protos = [{"name": "host_only", "params": EMPTY_PARAMS},
              {"name": "empty_launch", "params": EMPTY_PARAMS}]
    k = harness_launchers.build_module(so_path, protos, index, cudart)
    direct = {}
    for name in ("host_only", "empty_launch"):
        f = getattr(lib, name)
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
        f.restype = None
        direct[name] = f
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    x = torch.zeros(1 << 10, device="cuda")
    y = torch.empty_like(x)
    xp, yp, n, s = x.data_ptr(), y.data_ptr(), x.numel(), torch.cuda.current_stream().cuda_stream
    sync = torch.cuda.synchronize
    out = {"kind": "launcher", "calls": calls}
    empty = per_call_us(lambda: None, calls)
    host_only, host_k = direct["host_only"], k.host_only
    launch, launch_k = direct["empty_launch"], k.empty_launch
    c = {
        "ctypes_precomputed": per_call_us(lambda: host_only(xp, yp, n, s), calls) - empty,
        "ctypes_from_tensors": per_call_us(
            lambda: host_only(x.data_ptr(), y.data_ptr(), x.numel(),
                              raw(index) if raw else torch.cuda.current_stream().cuda_stream),
            calls) - empty,
        "kernels_module": per_call_us(lambda: host_k(x, y, n), calls) - empty,
        "launch_ctypes_precomputed": per_call_us(lambda: launch(xp, yp, n, s), calls,
                                                 sync=sync) - empty,
        "launch_kernels_module": per_call_us(lambda: launch_k(x, y, n), calls, sync=sync) - empty,
    }
    out["host_us_per_call"] = c
    out["launcher_overhead_us"] = c["kernels_module"] - c["ctypes_precomputed"]
    out["launch_overhead_us"] = c["launch_kernels_module"] - c["launch_ctypes_precomputed"]
    out["within_3us"] = max(out["launcher_overhead_us"], out["launch_overhead_us"]) <= 3.0
    # What the pieces of a forward cost on the host (one call each, us).
    module = torch.nn.Identity()
    grad_off = torch.no_grad()

    def no_grad_enter_exit():
        with grad_off:
            pass
    pieces = {
        "torch.cuda.current_stream().cuda_stream":
            lambda: torch.cuda.current_stream().cuda_stream,
        "torch._C._cuda_getCurrentRawStream(i)": (lambda: raw(index)) if raw else None,
        "tensor.device.index": lambda: x.device.index,
        "tensor.get_device()": lambda: x.get_device(),
        "tensor.data_ptr()": lambda: x.data_ptr(),
        "cudaGetLastError (ctypes)": lambda: cudart.cudaGetLastError(),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "torch.no_grad() enter+exit": no_grad_enter_exit,
        "nn.Module call (Identity)": lambda: module(x),
        "torch.relu(x) (one aten op, launch included)": lambda: torch.relu(x),
    }
    out["piece_us"] = {name: (per_call_us(f, 5000, sync=sync) - empty if f else None)
                       for name, f in pieces.items()}
    # A forward-shaped call (allocate the output, launch) through each path, host time and the
    # event time under the bracket before issue 28 (GPU idle at `start`) and the covered one.
    fwd = {
        "kernels_module": lambda: launch_k(x, torch.empty_like(x), n),
        "ctypes": lambda: launch(x.data_ptr(), torch.empty_like(x).data_ptr(), n,
                                 raw(index) if raw else s),
        "eager torch.relu": lambda: torch.relu(x),
    }
    flush = torch.empty(flush_bytes(torch) // 4, dtype=torch.int32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    forward = {}
    for name, f in fwd.items():
        host_t = per_call_us(f, 5000, sync=sync) - empty
        old, new = [], []
        for _ in range(200):
            flush.zero_()
            sync()
            start.record()
            f()
            end.record()
            sync()
            old.append(start.elapsed_time(end) * 1000.0)
            flush.zero_()
            start.record()
            f()
            end.record()
            sync()
            new.append(start.elapsed_time(end) * 1000.0)
        forward[name] = {"host_us": host_t, "event_us_old_bracket": statistics.median(old),
                         "event_us_covered": statistics.median(new)}
    out["forward_shaped"] = forward
    return out


def no_tf32(torch):
    """IEEE fp32 matmul and convolution, as the bench sets them ([bench] allow_tf32 = false)."""
    try:  # PyTorch 2.9+: one API only (mixing it with allow_tf32 warns or fails)
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    except Exception:  # noqa: BLE001 (older torch: AttributeError or AssertionError)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def worker_main(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    with open(out_path, "a") as out:
        try:
            import torch  # noqa: PLC0415 (the parent needs no torch)

            props = torch.cuda.get_device_properties(0)
        except Exception as ex:  # noqa: BLE001
            out.write(json.dumps({"kind": "fatal", "error": "no PyTorch on a GPU here: %s: %s"
                                  % (type(ex).__name__, ex)}) + "\n")
            return 0
        mh = load_measure_honest()
        no_tf32(torch)
        env = {"kind": "env", "gpu": props.name, "torch": torch.__version__,
               "cuda": torch.version.cuda, "flush_bytes": flush_bytes(torch)}
        out.write(json.dumps(env) + "\n")
        out.flush()
        for e in spec["entries"]:
            t0 = time.time()
            try:
                row = measure_entry(torch, mh, e, spec)
            except Exception as ex:  # noqa: BLE001 (one entry's failure is its row)
                row = {"name": e["name"], "error": "independent: %s: %s" % (type(ex).__name__, ex),
                       "traceback": traceback.format_exc()[-2000:]}
            row["independent_s"] = round(time.time() - t0, 1)
            out.write(json.dumps(row) + "\n")
            out.flush()
            log("independent %s: %s" % (e["name"], row.get("error") or "%.2f us kernel, %.2fx"
                                        % (row["kernel_us"], row["indep_speedup"])))
            gc.collect()
            torch.cuda.empty_cache()
        if spec.get("empty_so"):
            try:
                row = launcher_benchmark(torch, mh, spec["empty_so"], spec["cuda_home"])
            except Exception as ex:  # noqa: BLE001
                row = {"kind": "launcher", "error": "%s: %s" % (type(ex).__name__, ex),
                       "traceback": traceback.format_exc()[-2000:]}
            out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: independent_timing.py SPEC.json OUT.jsonl")
    sys.exit(worker_main(sys.argv[1], sys.argv[2]))
