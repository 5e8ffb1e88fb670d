#!/usr/bin/env python3
"""Plain CUDA-event measurement of the honest bench suite (tests/bench_suite/honest, issue 6).

For each entry: build its kernels into a shared object (with `cuda-agent compile --json --store`
and `cuda-agent artifacts get`, or with nvcc directly when no cuda-agent binary runs here), load
it with ctypes, inject a `kernels` module that calls its extern "C" launchers the way DESIGN.md
section 4 says, and run the task's Model (eager) and the entry's ModelNew on the task's own
inputs. Correctness: shapes, dtypes, max abs error, allclose(atol=rtol=1e-2), inputs unchanged.
Timing: warm-up calls, then trials that alternate eager and kernel; before each trial a 512 MiB
buffer is overwritten (L2 flush); each trial is one forward between two torch.cuda.Event records
on the current stream, followed by torch.cuda.synchronize(); the medians are compared.

This is the independent yardstick for the bench harness's speedups: it shares no code with
gpu_bench/ or the harness.

Run on the GPU machine from the repository root (after scripts/gpu-node-run built build-gpu/):

    python3 scripts/gpu/measure_honest.py --out /tmp/measure_honest.json

Options: --only 04_rms_norm,06_layer_norm  --trials 30  --warmup 3  --cuda-agent PATH
         --builder nvcc (skip cuda-agent)  --arch sm_90  --build-only (no torch needed)

Every entry runs in its own child process (--in-process to share one), so a CUDA fault, a hang
(--entry-timeout) or a patched torch ends with its entry; the JSON summary is written either way.
Exit status: 0 when every entry built, matched and was timed; 1 otherwise; 2 on bad arguments.

The same script on the attack suite shows what a naive evaluator (one input set, no poisoning,
events on the current stream) would conclude about each attack:

    python3 scripts/gpu/measure_honest.py --suite tests/bench_suite/attacks --builder nvcc \
        --out /tmp/naive_attacks.json

(--builder nvcc skips the compile farm's policy, as a naive evaluator would.)
"""

import argparse
import ctypes
import gc
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SUITE = os.path.join(REPO, "tests", "bench_suite", "honest")
ATOL = RTOL = 1e-2
FLUSH_BYTES = 512 << 20

# ctypes types of the launcher scalar parameters (compile_farm/prototypes.cpp's integer types).
INTEGER_CTYPES = {
    "int": ctypes.c_int32, "int32_t": ctypes.c_int32, "signed": ctypes.c_int32,
    "unsigned": ctypes.c_uint32, "unsigned int": ctypes.c_uint32, "uint32_t": ctypes.c_uint32,
    "long": ctypes.c_int64, "long int": ctypes.c_int64, "long long": ctypes.c_int64,
    "long long int": ctypes.c_int64, "int64_t": ctypes.c_int64, "ptrdiff_t": ctypes.c_int64,
    "unsigned long": ctypes.c_uint64, "unsigned long long": ctypes.c_uint64,
    "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_uint64, "bool": ctypes.c_bool,
    "short": ctypes.c_int16, "int16_t": ctypes.c_int16, "unsigned short": ctypes.c_uint16,
    "uint16_t": ctypes.c_uint16, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8,
}
POINTER_DTYPES = {
    "float": "float32", "__half": "float16", "half": "float16", "__nv_bfloat16": "bfloat16",
    "nv_bfloat16": "bfloat16", "double": "float64", "int": "int32", "int32_t": "int32",
    "int64_t": "int64", "long long": "int64", "long long int": "int64", "int8_t": "int8",
    "int16_t": "int16", "short": "int16", "uint8_t": "uint8", "unsigned char": "uint8",
    "bool": "bool",
}
QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "std"}


class EntryError(Exception):
    """A failure of one entry, with the stage it happened in."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


def base_type(c_type):
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", c_type) if w not in QUALIFIERS]
    return " ".join(words)


def return_types(kernels_dir):
    """launcher name -> its return type, read from the extern "C" definitions."""
    out = {}
    pattern = re.compile(r'extern\s+"C"\s+([A-Za-z_][A-Za-z0-9_ ]*?)\s+([A-Za-z_]\w*)\s*\(')
    for name in sorted(os.listdir(kernels_dir)):
        with open(os.path.join(kernels_dir, name), errors="replace") as f:
            for m in pattern.finditer(f.read()):
                out[m.group(2)] = base_type(m.group(1))
    return out


# ---------------------------------------------------------------------------------------------
# Building the shared object


def find_cuda_agent(explicit):
    candidates = [explicit] if explicit else [
        os.path.join(REPO, "build-gpu", "cli", "cuda-agent"),
        os.path.join(REPO, "build", "cli", "cuda-agent"),
        shutil.which("cuda-agent"),
    ]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(cmd, timeout_s=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout_s)
    return p.returncode, p.stdout, p.stderr


def build_with_cuda_agent(exe, entry_dir, work, name, arch):
    store = os.path.join(work, "store")
    rc, out, err = run([exe, "compile", entry_dir, "--json", "--store", store, "--arch", arch])
    try:
        report = json.loads(out)
    except ValueError:
        raise EntryError("build", f"cuda-agent compile exit {rc}, no JSON: {err.strip()[-2000:]}")
    if not report.get("ok"):
        raise EntryError("policy", "cuda-agent compile refused it: " +
                         json.dumps(report.get("error", report))[:3000])
    so = os.path.join(work, name + ".so")
    rc, out, err = run([exe, "artifacts", "get", report["artifact_hash"], "--store", store,
                        "-o", so])
    if rc != 0:
        raise EntryError("build", f"cuda-agent artifacts get exit {rc}: {(out + err).strip()}")
    launchers = []
    for l in report["launchers"]:
        launchers.append({"name": l["name"], "params": [
            {"name": p.get("name", ""), "c_type": p["c_type"], "kind": p["kind"],
             "dtype": p.get("dtype")} for p in l["params"]]})
    return so, launchers, {"via": "cuda-agent", "artifact_hash": report["artifact_hash"],
                           "compile_seconds": report.get("total_seconds")}


def parse_launchers(kernels_dir):
    """A small stand-in for compile_farm/prototypes.cpp, for the nvcc fallback."""
    launchers = []
    pattern = re.compile(r'extern\s+"C"\s+[A-Za-z_][A-Za-z0-9_ ]*?\s+([A-Za-z_]\w*)\s*\(([^)]*)\)'
                         r'\s*\{', re.S)
    for fname in sorted(os.listdir(kernels_dir)):
        if not fname.endswith((".cu", ".cpp")):
            continue
        with open(os.path.join(kernels_dir, fname), errors="replace") as f:
            src = re.sub(r"//[^\n]*|/\*.*?\*/", " ", f.read(), flags=re.S)
        for m in pattern.finditer(src):
            params = []
            for text in [t.strip() for t in m.group(2).split(",") if t.strip()]:
                stars = text.count("*")
                words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
                pname = words[-1] if len(words) > 1 else ""
                c_type = text[: text.rfind(pname)].strip() if pname else text
                b = base_type(c_type)
                if stars == 1:
                    params.append({"name": pname, "c_type": c_type, "kind": "pointer",
                                   "dtype": POINTER_DTYPES.get(b)})
                elif b == "cudaStream_t":
                    params.append({"name": pname, "c_type": c_type, "kind": "stream"})
                elif b in ("float", "double"):
                    params.append({"name": pname, "c_type": c_type, "kind": "floating"})
                else:
                    params.append({"name": pname, "c_type": c_type, "kind": "integer"})
            launchers.append({"name": m.group(1), "params": params})
    return launchers


def build_with_nvcc(nvcc, entry_dir, work, name, arch):
    kdir = os.path.join(entry_dir, "kernels")
    sources = [os.path.join(kdir, f) for f in sorted(os.listdir(kdir))
               if f.endswith((".cu", ".cpp"))]
    text = "".join(open(s, errors="replace").read() for s in sources)
    libs = (["-lcublas"] if "cublas" in text else []) + (["-lcublasLt"] if "cublasLt" in text
                                                          else [])
    libs += ["-lcudnn"] if "cudnn" in text else []
    so = os.path.join(work, name + ".so")
    cmd = [nvcc, "-O3", f"-arch={arch}", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
           "-cudart", "shared", "-I", kdir, "-o", so] + sources + libs
    rc, out, err = run(cmd)
    if rc != 0:
        raise EntryError("build", "nvcc failed: " + (out + err).strip()[-3000:])
    return so, parse_launchers(kdir), {"via": "nvcc", "command": " ".join(cmd)}


# ---------------------------------------------------------------------------------------------
# The injected `kernels` module


def load_library(so_path, cuda_home):
    """The solution's shared object. Its libcudart / libcublas are normally the ones `import
    torch` already loaded (same sonames); a library the loader cannot find is preloaded from the
    CUDA toolkit and the load tried again."""
    mode = os.RTLD_NOW | getattr(os, "RTLD_LOCAL", 0)
    preloaded = set()
    while True:
        try:
            return ctypes.CDLL(so_path, mode=mode)
        except OSError as e:
            names = [n for n in re.findall(r"(lib[\w+-]+\.so[.\d]*)", str(e))
                     if n not in preloaded and os.path.basename(so_path) != n]
            candidate = os.path.join(cuda_home, "lib64", names[0]) if names else ""
            if not candidate or not os.path.exists(candidate):
                raise EntryError("load", f"cannot load {so_path}: {e}")
            ctypes.CDLL(candidate, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            preloaded.add(names[0])


def make_kernels_module(torch, so_path, launchers, returns, cuda_home):
    lib = load_library(so_path, cuda_home)
    module = types.ModuleType("kernels")
    for spec in launchers:
        fn = getattr(lib, spec["name"])
        argtypes, py_params = [], []
        for p in spec["params"]:
            if p["kind"] in ("pointer", "stream"):
                argtypes.append(ctypes.c_void_p)
            elif p["kind"] == "floating":
                argtypes.append(ctypes.c_double if base_type(p["c_type"]) == "double"
                                else ctypes.c_float)
            else:
                t = INTEGER_CTYPES.get(base_type(p["c_type"]))
                if t is None:
                    raise EntryError("load", f"{spec['name']}: no ctypes type for "
                                     f"'{p['c_type']}'")
                argtypes.append(t)
            if p["kind"] != "stream":
                py_params.append(p)
        fn.argtypes = argtypes
        rtype = returns.get(spec["name"], "void")
        fn.restype = None if rtype == "void" else ctypes.c_int
        has_stream = bool(spec["params"]) and spec["params"][-1]["kind"] == "stream"
        setattr(module, spec["name"],
                make_launcher(torch, spec["name"], fn, py_params, has_stream, rtype != "void"))
    module.__lib = lib  # keep the library loaded as long as the module lives
    return module


def make_launcher(torch, name, fn, params, has_stream, checks_status):
    dtypes = {p["name"]: getattr(torch, p["dtype"]) for p in params
              if p["kind"] == "pointer" and p.get("dtype")}

    def launcher(*args):
        if len(args) != len(params):
            raise TypeError(f"kernels.{name} takes {len(params)} arguments, got {len(args)}")
        c_args = []
        for i, (p, a) in enumerate(zip(params, args)):
            label = f"kernels.{name} parameter {i + 1} ({p['c_type']} {p['name']})"
            if p["kind"] == "pointer":
                if not isinstance(a, torch.Tensor) or not a.is_cuda:
                    raise TypeError(f"{label}: needs a CUDA tensor, got {type(a).__name__}")
                want = dtypes.get(p["name"])
                if want is not None and a.dtype != want:
                    raise TypeError(f"{label}: needs {want}, got {a.dtype}")
                c_args.append(ctypes.c_void_p(a.data_ptr()))
            elif p["kind"] == "floating":
                c_args.append(float(a))
            else:
                if isinstance(a, torch.Tensor):
                    raise TypeError(f"{label}: needs a Python number, got a tensor")
                c_args.append(int(a))
        if has_stream:
            c_args.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        status = fn(*c_args)
        if checks_status and status:
            raise RuntimeError(f"kernels.{name} returned {status}")
        return status

    launcher.__name__ = name
    return launcher


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# Measuring


def to_cuda(torch, values):
    return [v.cuda() if isinstance(v, torch.Tensor) and not v.is_cuda else v for v in values]


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(torch, ref, out, chunk=1 << 26):
    """Shapes, dtypes, layout, then |out - ref| <= atol + rtol * |ref| elementwise (allclose,
    NaN fails), in chunks so that multi-GB outputs need no multi-GB temporaries."""
    ref, out = as_list(ref), as_list(out)
    if len(ref) != len(out):
        return {"ok": False, "reason": f"{len(out)} outputs, reference has {len(ref)}"}
    worst, reasons = 0.0, []
    for i, (r, o) in enumerate(zip(ref, out)):
        if type(o) is not torch.Tensor:
            return {"ok": False, "reason": f"output {i} is {type(o).__name__}, not torch.Tensor"}
        if o.shape != r.shape or o.dtype != r.dtype:
            return {"ok": False, "reason": f"output {i}: {tuple(o.shape)} {o.dtype}, reference "
                                           f"{tuple(r.shape)} {r.dtype}"}
        if not o.is_contiguous():
            reasons.append(f"output {i} is not contiguous")
        of, rf = o.reshape(-1), r.reshape(-1)
        bad = 0
        for b in range(0, of.numel(), chunk):
            oc, rc = of[b:b + chunk].float(), rf[b:b + chunk].float()
            d = (oc - rc).abs()
            nan = int(torch.isnan(d).sum())
            if nan:
                worst = float("inf")
            elif d.numel():
                worst = max(worst, float(d.max()))
            bad += int((d > ATOL + RTOL * rc.abs()).sum()) + nan
            del oc, rc, d
        if bad:
            reasons.append(f"output {i}: {bad} of {o.numel()} elements outside atol=rtol={ATOL}")
    return {"ok": not reasons, "max_abs_err": worst, "reason": "; ".join(reasons)}


def summary(times):
    s = sorted(times)
    q = lambda f: s[min(len(s) - 1, int(f * (len(s) - 1) + 0.5))]
    return {"median_ms": statistics.median(s), "min_ms": s[0], "p10_ms": q(0.1),
            "p90_ms": q(0.9), "mean_ms": statistics.fmean(s),
            "cv": statistics.pstdev(s) / statistics.fmean(s) if len(s) > 1 else 0.0,
            "trials_ms": s}


def measure(torch, entry_dir, name, kernels_module, args):
    sys.modules["kernels"] = kernels_module
    task = load_module(os.path.join(entry_dir, "model.py"), f"task_{name}")
    new = load_module(os.path.join(entry_dir, "model_new.py"), f"model_new_{name}")
    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    with dev:
        init = to_cuda(torch, task.get_init_inputs())
        model = task.Model(*init).to(dev).eval()
        model_new = new.ModelNew(*init).to(dev).eval()
    model_new.load_state_dict(model.state_dict())
    torch.manual_seed(args.seed + 1)
    with dev:
        inputs = to_cuda(torch, task.get_inputs())
    saved = [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]
    with torch.no_grad():
        ref = model(*inputs)
        out = model_new(*inputs)
        torch.cuda.synchronize()
        check = compare(torch, ref, out)
        mutated = [i for i, (a, b) in enumerate(zip(inputs, saved))
                   if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
        del saved, out
        if mutated:
            check["ok"] = False
            check["reason"] = (check.get("reason", "") + f"; inputs {mutated} changed").strip("; ")
        result = {"correct": check["ok"], "max_abs_err": check.get("max_abs_err"),
                  "mismatch": check.get("reason", "")}
        if not check["ok"]:
            raise EntryError("correctness", f"{check.get('reason', 'mismatch')} (max abs err "
                                            f"{check.get('max_abs_err')})")

        flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device=dev)
        fns = {"eager": lambda: model(*inputs), "kernel": lambda: model_new(*inputs)}
        for _ in range(args.warmup):
            for fn in fns.values():
                fn()
        torch.cuda.synchronize()
        times = {"eager": [], "kernel": []}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for trial in range(args.trials):
            order = ["eager", "kernel"] if trial % 2 == 0 else ["kernel", "eager"]
            for which in order:
                flush.zero_()
                start.record()
                o = fns[which]()
                end.record()
                torch.cuda.synchronize()
                times[which].append(start.elapsed_time(end))
                del o
        last = model_new(*inputs)
        torch.cuda.synchronize()
        recheck = compare(torch, ref, last)
        del last, ref, flush
    result["recheck_after_timing"] = recheck["ok"]
    result["eager"] = summary(times["eager"])
    result["kernel"] = summary(times["kernel"])
    result["eager_ms"] = result["eager"]["median_ms"]
    result["kernel_ms"] = result["kernel"]["median_ms"]
    result["speedup"] = result["eager_ms"] / result["kernel_ms"]
    del model, model_new, inputs
    sys.modules.pop("kernels", None)
    if not recheck["ok"]:
        raise EntryError("correctness", "after timing: " + recheck.get("reason", "mismatch"))
    return result


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=DEFAULT_SUITE, help="honest suite directory")
    ap.add_argument("--only", default="", help="comma-separated entry names (default: all)")
    ap.add_argument("--out", default="", help="write the JSON summary here")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--builder", choices=["auto", "cuda-agent", "nvcc"], default="auto")
    ap.add_argument("--cuda-agent", default="", help="cuda-agent binary (default: build-gpu/, "
                    "build/, PATH)")
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--nvcc", default="", help="default: CUDA_HOME/bin/nvcc")
    ap.add_argument("--work", default="", help="where .so files and the store go (default: a "
                    "temporary directory)")
    ap.add_argument("--build-only", action="store_true",
                    help="build and load each entry's launchers; no torch, no GPU work")
    ap.add_argument("--in-process", action="store_true",
                    help="run every entry in this process (default: one child process per "
                    "entry, so a CUDA fault or a patched torch cannot spoil the next entry)")
    ap.add_argument("--entry-timeout", type=int, default=1200, help="seconds per child process")
    ap.add_argument("--no-table", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trials < 1 or args.warmup < 0:
        ap.error("--trials must be >= 1 and --warmup >= 0")
    args.nvcc = args.nvcc or os.path.join(args.cuda_home, "bin", "nvcc")
    if not os.path.isdir(args.suite):
        ap.error(f"{args.suite}: not a directory")

    names = sorted(d for d in os.listdir(args.suite)
                   if os.path.isfile(os.path.join(args.suite, d, "model_new.py")))
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            ap.error(f"unknown entries {unknown}; have {names}")
        names = wanted
    work = args.work or tempfile.mkdtemp(prefix="measure_honest_")
    os.makedirs(work, exist_ok=True)
    exe = None if args.builder == "nvcc" else find_cuda_agent(args.cuda_agent)
    if args.builder == "cuda-agent" and not exe:
        ap.error("no cuda-agent binary found; pass --cuda-agent PATH or --builder nvcc")

    if not args.in_process and not args.build_only:
        return run_isolated(args, names, work, exe)

    torch = None
    env = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "work": work,
           "builder": args.builder, "cuda_agent": exe, "trials": args.trials,
           "warmup": args.warmup, "seed": args.seed, "atol": ATOL, "rtol": RTOL,
           "flush_bytes": FLUSH_BYTES}
    if not args.build_only:
        try:
            import torch as torch_module
            torch = torch_module
            if not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
        except Exception as e:  # the whole run needs torch and a GPU
            message = f"cannot use PyTorch on a GPU here: {e}"
            print(f"measure_honest: {message}", file=sys.stderr)
            return finish(args, env, [{"name": n, "status": "failed:no_gpu", "error": message}
                                      for n in names])
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True  # PyTorch's default, recorded below
        props = torch.cuda.get_device_properties(0)
        env.update({"gpu": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                    "sm_count": props.multi_processor_count,
                    "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                    "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32})

    results = []
    for name in names:
        entry_dir = os.path.join(args.suite, name)
        row = {"name": name, "status": "ok"}
        try:
            with open(os.path.join(entry_dir, "expect.json")) as f:
                expect = json.load(f)
            row["task"] = expect.get("task", "")
            row["expect_beats_eager"] = expect.get("expect_beats_eager")
        except (OSError, ValueError) as e:
            row["task"] = f"(expect.json: {e})"
        t0 = time.time()
        try:
            build = None
            if exe:
                try:
                    build = build_with_cuda_agent(exe, entry_dir, work, name, args.arch)
                except (EntryError, OSError, subprocess.TimeoutExpired) as e:
                    # A refusal is a result; only a cuda-agent that cannot run falls back to nvcc.
                    if args.builder == "cuda-agent" or getattr(e, "stage", "") == "policy":
                        raise
                    row["cuda_agent_error"] = str(e)
            if build is None:
                build = build_with_nvcc(args.nvcc, entry_dir, work, name, args.arch)
            so, launchers, row["build"] = build
            row["launchers"] = [l["name"] for l in launchers]
            returns = return_types(os.path.join(entry_dir, "kernels"))
            if args.build_only:
                lib = load_library(so, args.cuda_home)
                missing = [l["name"] for l in launchers if not hasattr(lib, l["name"])]
                if missing:
                    raise EntryError("load", f"launchers missing from {so}: {missing}")
            else:
                kernels_module = make_kernels_module(torch, so, launchers, returns, args.cuda_home)
                row.update(measure(torch, entry_dir, name, kernels_module, args))
        except EntryError as e:
            row["status"] = f"failed:{e.stage}"
            row["error"] = str(e)
        except Exception as e:  # one entry's failure must not stop the others
            row["status"] = "failed:exception"
            row["error"] = f"{type(e).__name__}: {e}"
            row["traceback"] = traceback.format_exc()[-4000:]
        finally:
            row["seconds"] = round(time.time() - t0, 2)
            sys.modules.pop("kernels", None)
            if torch is not None:
                gc.collect()
                torch.cuda.empty_cache()
        results.append(row)
        print_row(row, args.build_only)

    return finish(args, env, results)


def finish(args, env, results):
    if not args.no_table:
        print_table(results, args.build_only)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": env, "entries": results}, f, indent=2)
        if not args.no_table:
            print(f"summary: {args.out}")
    return 1 if any(r["status"] != "ok" for r in results) else 0


def run_isolated(args, names, work, exe):
    """Each entry in its own `--in-process` child: a sticky CUDA error, an exhausted GPU or a
    solution that patches torch ends with its child."""
    env, results = {}, []
    for name in names:
        out = os.path.join(work, f"{name}.result.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--in-process", "--no-table",
               "--suite", args.suite, "--only", name, "--out", out, "--work", work,
               "--trials", str(args.trials), "--warmup", str(args.warmup),
               "--seed", str(args.seed), "--arch", args.arch, "--builder", args.builder,
               "--cuda-home", args.cuda_home, "--nvcc", args.nvcc]
        if exe:
            cmd += ["--cuda-agent", exe]
        if os.path.exists(out):
            os.remove(out)
        t0 = time.time()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=args.entry_timeout)
            text, status = p.stdout, f"failed:crash (exit {p.returncode})"
        except subprocess.TimeoutExpired as e:
            text = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(
                errors="replace")
            status = f"failed:timeout ({args.entry_timeout} s)"
        sys.stdout.write(text)
        sys.stdout.flush()
        try:
            with open(out) as f:
                child = json.load(f)
            env = env or child.get("env", {})
            if child.get("env", {}).get("gpu"):
                env = child["env"]
            results.extend(child["entries"])
        except (OSError, ValueError, KeyError):
            row = {"name": name, "status": status, "error": text[-3000:],
                   "seconds": round(time.time() - t0, 2)}
            results.append(row)
            print_row(row, False)
    env["isolated"] = True
    return finish(args, env, results)


def print_row(r, build_only):
    if r["status"] != "ok":
        print(f"[{r['name']}] {r['status']}: {r.get('error', '')[:2000]}", flush=True)
        if "traceback" in r:
            print(r["traceback"], flush=True)
    elif build_only:
        print(f"[{r['name']}] built via {r['build']['via']}: {', '.join(r['launchers'])}",
              flush=True)
    else:
        print(f"[{r['name']}] eager {r['eager_ms']:.4f} ms, kernel {r['kernel_ms']:.4f} ms, "
              f"speedup {r['speedup']:.3f}x, max abs err {r['max_abs_err']:.3g}", flush=True)


def print_table(results, build_only):
    print()
    if build_only:
        print(f"{'entry':<32} {'status':<22} launchers")
        for r in results:
            print(f"{r['name']:<32} {r['status']:<22} {', '.join(r.get('launchers', []))}")
        return
    print(f"{'task':<58} {'eager ms':>10} {'kernel ms':>10} {'speedup':>8} {'cv e/k':>11} "
          f"{'max abs err':>12}  status")
    for r in results:
        task = (r.get("task") or r["name"]).replace(".py", "")
        if r["status"] == "ok":
            cv = f"{r['eager']['cv']:.3f}/{r['kernel']['cv']:.3f}"
            print(f"{task:<58} {r['eager_ms']:>10.4f} {r['kernel_ms']:>10.4f} "
                  f"{r['speedup']:>7.3f}x {cv:>11} {r['max_abs_err']:>12.3g}  ok")
        else:
            print(f"{task:<58} {'-':>10} {'-':>10} {'-':>8} {'-':>11} {'-':>12}  {r['status']}")


if __name__ == "__main__":
    sys.exit(main())
