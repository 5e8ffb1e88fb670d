"""The GPU task filter: runs one KernelBench-format task file and says whether it is fit to train or
evaluate on (issue 7 item 4; contract: docs/formats/harness.md, "The task filter"). It runs in a
sandboxed child of `cuda-agent tasks filter`, like the bench harness (core/sandbox.h is the
boundary; the task's code is executed here).

    python3 -I -B filter_task.py --request REQ.json --result RES.json

Checks, in order; the first failure ends the run (later checks are reported as not run):
  load            the file executes and defines Model, get_inputs, get_init_inputs
  runs_eager      Model(*get_init_inputs())(*get_inputs()) runs on the device (eval mode, no_grad)
                  and returns tensors
  finite          no output holds NaN or infinity
  deterministic   a second run from scratch (same seed: weights and inputs) is bit-identical
  stochastic_ops  the forward calls no random aten op (dropout, rand*, bernoulli, multinomial,
                  normal_, ...), recorded by a TorchDispatchMode in eval and in train mode
  not_constant    other inputs (another seed) give other outputs, and no output is uniform
  input_sensitive replacing each input tensor alone by another draw changes at least one output
  eager_time      the eager median (CUDA events, after warm-up) is inside [min_ms, max_ms]
  runs_compiled   torch.compile(Model) runs; its time is measured too (not a filter)

Timing needs the GPU to itself while other filter children check other tasks: with `lock_dir` the
children share two lock files (turnstile.lock, gpu.lock). GPU work of a check holds gpu.lock
shared, a timing section holds it exclusively; the turnstile stops new shared holders while a
timing section waits, so timing is not starved. torch.compile's first call (the compilation and
one forward) runs outside the locks: holding a lock through seconds of compilation would stall
every other child. A child that dies releases its locks (the kernel drops them with its files).

Exit 0 when the checks ran (passed or not), 1 with `error` set when they could not (bad request,
no torch, no GPU). Device "cpu" runs the same checks on the CPU (tests; times from perf_counter).

The child is usually forked from a harness zygote (gpu_bench/harness/zygote.py, one per filter
thread) that ran `preload()` once; the fork then calls `main(argv, t0)`, and `import torch` below
costs nothing (phases_s.import_torch is then about 0). Without the zygote the child is a fresh
`python3 -I -B filter_task.py ...` and pays for the import itself.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import types

FORMAT_REQUEST = "cuda-agent-filter-request"
FORMAT_RESULT = "cuda-agent-filter-result"
VERSION = 1

CHECKS = ["load", "runs_eager", "finite", "deterministic", "stochastic_ops", "not_constant",
          "input_sensitive", "eager_time", "runs_compiled"]

DEFAULT_OPTIONS = {
    "device": "cuda",
    "seed": 1234,
    "other_seed": 4321,
    "eager_min_ms": 1.0,
    "eager_max_ms": 100.0,
    "warmup_trials": 3,
    "timed_trials": 10,
    "compile": True,
    "allow_tf32": False,
    # Two outputs "differ" when max |a - b| > change_rtol * max(|a|, |b|) (floating point);
    # integer and boolean outputs differ when any element does.
    "change_rtol": 1e-5,
    "lock_dir": "",
}

# Random aten ops, by base name (leading and trailing underscores removed).
STOCHASTIC_OPS = {
    "bernoulli", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "multinomial", "normal", "normal_functional", "uniform", "exponential", "geometric", "cauchy",
    "log_normal", "random", "rrelu_with_noise", "native_dropout", "dropout", "fused_dropout",
    "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "poisson", "binomial",
    "standard_gamma", "sample_dirichlet",
}


class FilterError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def op_base_name(schema_name):
    """'aten::bernoulli_' -> 'bernoulli'; '_fused_dropout' -> 'fused_dropout'."""
    name = schema_name.split("::")[-1]
    return name.strip("_")


def stochastic_ops(op_names):
    """The random ops among recorded aten op names, sorted."""
    return sorted(n for n in set(op_names) if op_base_name(n) in STOCHASTIC_OPS)


def median(xs):
    return statistics.median(xs) if xs else 0.0


class GpuLocks:
    """Shared / exclusive use of the GPU among filter children (see the module docstring)."""

    def __init__(self, lock_dir):
        self.turnstile = self.gpu = None
        self.waited_s = 0.0
        if lock_dir:
            self.turnstile = os.open(os.path.join(lock_dir, "turnstile.lock"), os.O_RDONLY)
            self.gpu = os.open(os.path.join(lock_dir, "gpu.lock"), os.O_RDONLY)

    @contextlib.contextmanager
    def shared(self):
        if self.gpu is None:
            yield
            return
        import fcntl

        t0 = time.perf_counter()
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.gpu, fcntl.LOCK_SH)
        fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.waited_s += time.perf_counter() - t0
        try:
            yield
        finally:
            fcntl.flock(self.gpu, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self):
        if self.gpu is None:
            yield
            return
        import fcntl

        t0 = time.perf_counter()
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.gpu, fcntl.LOCK_EX)
        self.waited_s += time.perf_counter() - t0
        try:
            yield
        finally:
            fcntl.flock(self.gpu, fcntl.LOCK_UN)
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)


class Filter:
    """One task's checks. `torch` is imported by the caller (so a missing torch is an error)."""

    def __init__(self, torch, source, options, result):
        self.torch = torch
        self.source = source
        self.o = options
        self.result = result
        self.dev = options["device"]
        self.locks = GpuLocks(options.get("lock_dir") or "")
        self.module = None
        self.op_names = set()
        self.t_start = time.perf_counter()
        result.setdefault("phases_s", {})

    # --- bookkeeping ---------------------------------------------------------------------------
    def check(self, name, passed, reason="", **details):
        self.result["checks"].append({"name": name, "passed": bool(passed), "reason": reason,
                                      "details": details})
        return bool(passed)

    def sync(self):
        if self.dev.startswith("cuda"):
            self.torch.cuda.synchronize()

    def release(self):
        if self.dev.startswith("cuda"):
            self.torch.cuda.empty_cache()  # freed memory goes back to the other children

    def on_device(self):
        """Tensors made inside are made on the device (torch 2's device context; the CPU needs
        none, and torch 1.x has none: there the task's tensors are moved afterwards)."""
        if self.dev == "cpu" or not hasattr(self.torch.device, "__enter__"):
            return contextlib.nullcontext()
        return self.torch.device(self.dev)

    # --- running the task ----------------------------------------------------------------------
    def load(self):
        module = types.ModuleType("task_model")
        module.__file__ = "model.py"
        try:
            exec(compile(self.source, "model.py", "exec"), module.__dict__)
        except BaseException as e:  # noqa: BLE001 (a broken task is a failed check)
            return self.check("load", False, "%s: %s" % (type(e).__name__, e))
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
        if missing:
            return self.check("load", False, "model.py does not define %s" % ", ".join(missing))
        self.module = module
        return self.check("load", True)

    def build(self, seed, train=False):
        torch = self.torch
        torch.manual_seed(seed)
        with self.on_device():
            model = self.module.Model(*self.module.get_init_inputs())
        model = model.to(self.dev)
        return model.train() if train else model.eval()

    def inputs(self, seed):
        torch = self.torch
        torch.manual_seed(seed)
        with self.on_device():
            xs = list(self.module.get_inputs())
        return [x.to(self.dev) if isinstance(x, torch.Tensor) else x for x in xs]

    def forward(self, model, xs, record=False):
        torch = self.torch
        rec = self._recorder() if record else contextlib.nullcontext()
        with torch.no_grad(), rec:
            out = model(*xs)
        self.sync()
        return out

    def _recorder(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        names = self.op_names

        class Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                names.add(func._schema.name)
                return func(*args, **(kwargs or {}))

        return Recorder()

    def flat(self, out):
        """The output tensors, or raises FilterError when the output is not tensors."""
        torch = self.torch
        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, (list, tuple)) and out and all(isinstance(t, torch.Tensor)
                                                          for t in out):
            return list(out)
        raise FilterError("output", "forward returned %s, not a tensor or a tuple of tensors"
                          % type(out).__name__)

    def differs(self, a, b):
        torch = self.torch
        if a.shape != b.shape or a.dtype != b.dtype:
            return True
        if a.numel() == 0:
            return False
        if a.is_floating_point() or a.is_complex():
            wide = (torch.float32, torch.float64)
            a, b = (a, b) if a.dtype in wide else (a.float(), b.float())  # no copy for fp32
            scale = max(a.abs().max().item(), b.abs().max().item())
            diff = (a - b).abs().max().item()
            return diff > float(self.o["change_rtol"]) * scale
        return not torch.equal(a, b)

    def same_bits(self, a, b):
        return a.shape == b.shape and a.dtype == b.dtype and bool(self.torch.equal(a, b))

    # --- the checks ----------------------------------------------------------------------------
    def run(self):
        torch = self.torch
        o = self.o
        if not self.load():
            return
        seed, other = int(o["seed"]), int(o["other_seed"])
        try:
            with self.locks.shared():
                model = self.build(seed)
                xs = self.inputs(seed)
                out = self.flat(self.forward(model, xs, record=True))
        except FilterError as e:
            return self.check("runs_eager", False, e.message)
        except BaseException as e:  # noqa: BLE001
            return self.check("runs_eager", False, "%s: %s" % (type(e).__name__, str(e)[:1500]),
                              oom=is_oom(torch, e))
        self.check("runs_eager", True, shapes=[list(t.shape) for t in out],
                   dtypes=[str(t.dtype).replace("torch.", "") for t in out])
        bad = [i for i, t in enumerate(out)
               if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all())]
        if not self.check("finite", not bad, "output(s) %s hold NaN or infinity" % bad
                          if bad else ""):
            return
        # GPU memory: each phase keeps at most two copies of the task's tensors alive (the first
        # run's and one more), which bounds a child's peak for the memory budget of the parent.
        try:
            with self.locks.shared():
                # A fresh model and fresh inputs of the same seed: the whole task is deterministic.
                again = self.flat(self.forward(self.build(seed), self.inputs(seed)))
                diff = [i for i, (a, b) in enumerate(zip(out, again)) if not self.same_bits(a, b)]
                same_count = len(out) == len(again)
                del again
                # Train mode only records the ops it calls: the first run's inputs serve.
                train_ops = set()
                saved, self.op_names = self.op_names, train_ops
                self.forward(self.build(seed, train=True), xs, record=True)
                self.op_names = saved
            self.release()
        except BaseException as e:  # noqa: BLE001
            return self.check("deterministic", False, "second run: %s: %s"
                              % (type(e).__name__, str(e)[:1500]), oom=is_oom(torch, e))
        if not self.check("deterministic", not diff and same_count,
                          "two runs with seed %d gave different output(s) %s" % (seed, diff)
                          if diff else ""):
            return
        random_eval = stochastic_ops(self.op_names)
        random_train = stochastic_ops(train_ops)
        reason = ""
        if random_eval:
            reason = "forward calls random op(s) %s" % ", ".join(random_eval)
        elif random_train:
            reason = "forward calls random op(s) %s in train mode" % ", ".join(random_train)
        if not self.check("stochastic_ops", not reason, reason, ops=sorted(self.op_names)):
            return
        try:
            with self.locks.shared():
                xs_other = self.inputs(other)
                out_other = self.flat(self.forward(model, xs_other))
                changed = [i for i, (a, b) in enumerate(zip(out, out_other)) if self.differs(a, b)]
                del out_other
                uniform = [i for i, t in enumerate(out) if t.numel() > 1 and bool(
                    (t.reshape(-1) == t.reshape(-1)[0]).all())]
                insensitive = []
                tensor_inputs = [i for i, x in enumerate(xs) if isinstance(x, torch.Tensor)]
                for i in tensor_inputs:
                    mixed = list(xs)
                    mixed[i] = xs_other[i]
                    got = self.flat(self.forward(model, mixed))
                    if not any(self.differs(a, b) for a, b in zip(out, got)):
                        insensitive.append(i)
                    del got, mixed
                del xs_other
            self.release()
        except BaseException as e:  # noqa: BLE001
            return self.check("not_constant", False, "run on other inputs: %s: %s"
                              % (type(e).__name__, str(e)[:1500]), oom=is_oom(torch, e))
        reason = ""
        if not changed:
            reason = "inputs of seed %d and seed %d give the same outputs" % (seed, other)
        elif uniform:
            reason = "every element of output(s) %s is the same value" % uniform
        if not self.check("not_constant", not reason, reason):
            return
        if not self.check("input_sensitive", not insensitive,
                          "no output changes when input(s) %s alone change" % insensitive
                          if insensitive else "", tensor_inputs=tensor_inputs):
            return
        try:
            eager = self.time(model, xs, "eager")
        except BaseException as e:  # noqa: BLE001
            return self.check("eager_time", False, "timing: %s: %s"
                              % (type(e).__name__, str(e)[:1500]), oom=is_oom(torch, e))
        self.result["eager_ms"] = eager["median_ms"]
        lo, hi = float(o["eager_min_ms"]), float(o["eager_max_ms"])
        ms = eager["median_ms"]
        reason = ""
        if ms < lo:
            reason = "eager median %.3f ms is below %.3g ms" % (ms, lo)
        elif ms > hi:
            reason = "eager median %.3f ms is above %.3g ms" % (ms, hi)
        if not self.check("eager_time", not reason, reason, **eager):
            return
        if not o.get("compile", True):
            return self.check("runs_compiled", True, "not checked (compile off)", skipped=True)
        if not hasattr(torch, "compile"):
            return self.check("runs_compiled", True, "not checked: torch %s has no torch.compile"
                              % torch.__version__, skipped=True)
        t0 = time.perf_counter()
        self.result["phases_s"]["checks"] = t0 - self.t_start
        try:
            compiled = torch.compile(model)
            got = self.flat(self.forward(compiled, xs))
        except BaseException as e:  # noqa: BLE001
            return self.check("runs_compiled", False, "%s: %s" % (type(e).__name__,
                                                                   str(e)[:1500]),
                              oom=is_oom(torch, e))
        first_s = time.perf_counter() - t0
        self.result["phases_s"]["first_compiled_call"] = first_s
        max_abs = max((float((a.float() - b.float()).abs().max().item())
                       for a, b in zip(out, got) if a.numel() and a.shape == b.shape),
                      default=0.0)
        try:
            timed = self.time(compiled, xs, "compiled")
        except BaseException as e:  # noqa: BLE001
            return self.check("runs_compiled", False, "timing: %s: %s"
                              % (type(e).__name__, str(e)[:1500]), oom=is_oom(torch, e))
        self.result["compile_ms"] = timed["median_ms"]
        self.check("runs_compiled", True, compile_s=first_s, max_abs_diff_vs_eager=max_abs,
                   **timed)

    def time(self, model, xs, what):
        """Median of timed_trials after warmup_trials, with the GPU to this child alone. A first
        trial far above the window ends the measurement early (the task is out anyway)."""
        torch = self.torch
        o = self.o
        cuda = self.dev.startswith("cuda")
        times = []
        with self.locks.exclusive(), torch.no_grad():
            for _ in range(int(o["warmup_trials"])):
                model(*xs)
            self.sync()
            for _ in range(int(o["timed_trials"])):
                if cuda:
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    model(*xs)
                    end.record()
                    torch.cuda.synchronize()
                    times.append(float(start.elapsed_time(end)))
                else:
                    t0 = time.perf_counter()
                    model(*xs)
                    times.append((time.perf_counter() - t0) * 1e3)
                if what == "eager" and times[-1] > 5 * float(o["eager_max_ms"]):
                    break
        return {"median_ms": median(times), "min_ms": min(times), "max_ms": max(times),
                "trials": len(times), "clock": "cuda_events" if cuda else "perf_counter"}


def is_oom(torch, e):
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e)


def set_precision(torch, allow_tf32):
    """TF32 off (or on) for matmul and cuDNN, as the bench sets it for baselines."""
    try:
        import evaluate  # noqa: PLC0415 (the bench's own setting, when importable)

        return evaluate.precision_flags(allow_tf32)
    except Exception:  # noqa: BLE001
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
        return ["torch.backends.cuda.matmul.allow_tf32=%s" % allow_tf32,
                "torch.backends.cudnn.allow_tf32=%s" % allow_tf32]


def new_result():
    return {"format": FORMAT_RESULT, "version": VERSION, "ok": True, "error": None,
            "passed": False, "checks": [], "not_run": [], "eager_ms": None, "compile_ms": None,
            "versions": {}, "precision_flags": [], "lock_wait_s": 0.0, "wall_s": 0.0,
            "phases_s": {}, "peak_gpu_bytes": 0}


def run_request(request, result):
    """Fills `result` for a parsed request. Raises FilterError when the checks cannot run."""
    if request.get("format") != FORMAT_REQUEST or request.get("version") != VERSION:
        raise FilterError("filter.request", "not a %s version %d" % (FORMAT_REQUEST, VERSION))
    options = dict(DEFAULT_OPTIONS)
    options.update(request.get("options") or {})
    try:
        with open(request["task_py"]) as f:
            source = f.read()
    except (KeyError, OSError) as e:
        raise FilterError("filter.request", "cannot read the task file: %s" % e)
    phases = result["phases_s"]
    t0 = time.perf_counter()
    try:
        import torch  # noqa: PLC0415 (after the request is known to be sane)
    except ImportError as e:
        raise FilterError("filter.no_torch", "this node's python cannot import torch: %s" % e)
    torch.set_num_threads(1)
    phases["import_torch"] = time.perf_counter() - t0
    if options["device"].startswith("cuda"):
        if not torch.cuda.is_available():
            raise FilterError("filter.no_gpu", "torch.cuda.is_available() is False here")
        torch.cuda.set_device(torch.device(options["device"]))
        result["versions"] = {"torch": torch.__version__,
                              "gpu_name": torch.cuda.get_device_name(),
                              "cuda_runtime_torch": torch.version.cuda or ""}
        result["precision_flags"] = set_precision(torch, bool(options["allow_tf32"]))
    else:
        result["versions"] = {"torch": torch.__version__, "gpu_name": "cpu"}
    phases["device_init"] = time.perf_counter() - t0 - phases["import_torch"]
    f = Filter(torch, source, options, result)
    try:
        f.run()
    finally:
        result["lock_wait_s"] = f.locks.waited_s
        if options["device"].startswith("cuda"):
            result["peak_gpu_bytes"] = int(torch.cuda.max_memory_reserved())
    ran = [c["name"] for c in result["checks"]]
    result["not_run"] = [c for c in CHECKS if c not in ran]
    result["passed"] = bool(result["checks"]) and all(c["passed"] for c in result["checks"]) \
        and not result["not_run"]


# A tiny task for preload(): elementwise, so that no BLAS or OpenMP pool starts threads.
_PRELOAD_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(x * self.w) + 1

def get_inputs():
    return [torch.randn(2, 4)]

def get_init_inputs():
    return [4]
"""


def preload():
    """For the zygote (zygote.py): imports torch and the modules a filter child uses, and runs
    every check once on a tiny task on the CPU (the dispatch-mode recorder, the comparisons, the
    timing loop), so that torch's lazy imports happen here and not in each child. Never touches
    CUDA (each forked child initialises its own) and starts no thread. Returns facts for logs."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch  # noqa: PLC0415
    import result_io  # noqa: F401, PLC0415

    try:
        import evaluate  # noqa: F401, PLC0415 (the bench's precision flags, as set_precision uses)
    except Exception:  # noqa: BLE001 (optional: set_precision falls back)
        pass
    torch.set_num_threads(1)  # as every child sets it, before any op could start a pool
    result = new_result()
    options = dict(DEFAULT_OPTIONS, device="cpu", compile=False, warmup_trials=1, timed_trials=1,
                   eager_min_ms=0.0, eager_max_ms=1e9)
    Filter(torch, _PRELOAD_TASK, options, result).run()
    failed = [c["name"] for c in result["checks"] if not c["passed"]]
    if failed:
        raise RuntimeError("the preload task failed %s" % failed)
    return {"torch": torch.__version__}


def main(argv, t0=None):
    """Runs one task's checks; returns the exit status. t0 (time.perf_counter()) is when the work
    on this task began: the process start, or when the zygote received the job."""
    t0 = time.perf_counter() if t0 is None else t0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's dir
    from result_io import write_result  # noqa: E402 (after the path is set)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True)
    ap.add_argument("--result", required=True)
    args = ap.parse_args(argv)
    result = new_result()
    try:
        with open(args.request) as f:
            request = json.load(f)
        run_request(request, result)
    except FilterError as e:
        result["ok"] = False
        result["error"] = {"code": e.code, "message": e.message}
    except Exception as e:  # noqa: BLE001 (an unexpected failure is still a result)
        import traceback

        result["ok"] = False
        result["error"] = {"code": "filter.internal", "message": "%s: %s\n%s" % (
            type(e).__name__, e, traceback.format_exc()[-2000:])}
    result["wall_s"] = time.perf_counter() - t0
    write_result(args.result, result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # threads or atexit hooks the task left behind do not run
