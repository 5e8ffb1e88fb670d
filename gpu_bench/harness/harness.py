"""The GPU bench harness: verifies, times and profiles one solution against its task's reference,
in a child process of the bench worker (DESIGN.md section 5; contract: docs/formats/harness.md).

    python3 -I -B harness.py --request REQ.json --result RES.json

Reads the request, writes the result JSON (atomically) and exits 0 when the evaluation ran, even
if the candidate failed its checks; exits 1 with `error` set when it could not run (bad request,
broken task, no GPU); any other ending (a signal, the deadline) is a crash to the caller.

Untrusted code (model_new.py and the solution's shared object) runs in this process; the OS
sandbox around it (core/sandbox.h) is the boundary. Inside, model_new.py is checked by an AST
allow-list (policy.py), runs with restricted builtins and imports, and its forward runs under a
dispatch-level op guard (guard.py).
"""

import argparse
import json
import os
import sys
import threading
import time

_T0 = time.perf_counter()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's dir

from errors import HarnessError  # noqa: E402
from result_io import write_result  # noqa: E402
import tolerance  # noqa: E402

FORMAT_REQUEST = "cuda-agent-harness-request"
FORMAT_RESULT = "cuda-agent-harness-result"
VERSION = 1

DEFAULT_OPTIONS = {
    "tolerance_profile": "cuda-agent",
    "verify_input_sets": 5,
    "warmup_trials": 10,
    "timed_trials": 100,
    "input_sets": 8,
    "checked_trial_fraction": 0.1,
    "allow_tf32": False,
    "implausible_speedup": 50.0,
    "measure_eager": True,
    "measure_compile": True,
    "poison_memory": True,
    "input_memory_fraction": 0.25,
    "rss_limit_bytes": 0,
    "ncu_region": False,
    "profile_calls": 5,
}


def new_result(mode):
    return {
        "format": FORMAT_RESULT,
        "version": VERSION,
        "mode": mode,
        "ok": True,
        "passed": False,
        "error": None,
        "device_fault": False,
        "checks": [],
        "violations": [],
        "timing": None,
        "versions": {},
        "precision_flags": [],
        "seeds": [],
        "breakdown_s": {"startup": 0.0},
        "profile_report": "",
        "notes": [],
    }


def start_rss_watchdog(limit_bytes, result_path, result):
    """Ends the process (exit 3, error harness.memory_limit) when its resident set passes the
    limit: RLIMIT_AS cannot bound a CUDA process, which reserves terabytes of address space."""
    if limit_bytes <= 0:
        return

    def watch():
        while True:
            try:
                with open("/proc/self/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            rss = int(line.split()[1]) * 1024
                            break
                    else:
                        rss = 0
            except OSError:
                rss = 0
            if rss > limit_bytes:
                r = dict(result)
                r["ok"] = False
                r["error"] = {"category": "invalid_input", "code": "harness.memory_limit",
                              "message": "harness resident memory %d bytes passed the limit %d"
                              % (rss, limit_bytes)}
                try:
                    write_result(result_path, r)
                finally:
                    os._exit(3)
            time.sleep(0.2)

    threading.Thread(target=watch, name="rss-watchdog", daemon=True).start()


def preload():
    """For the zygote (zygote.py): imports torch and every harness module, and runs the Python
    paths a first check would otherwise pay for (the op guard's dispatch mode, the output
    comparison, the device context) once on tiny CPU tensors, so that torch's lazy imports happen
    here. Never touches CUDA: jobs are forked from this process and each initialises its own.
    Returns facts for the worker's log."""
    import torch

    import compare
    import evaluate  # noqa: F401
    import guard
    import profile_mode  # noqa: F401
    import timing  # noqa: F401

    x = torch.arange(4, dtype=torch.float32)
    y = x.clone()
    with guard.OpGuard() as g:
        x.view(2, 2).t()
        torch.empty_like(x)
        try:
            torch.add(x, y)
        except guard.GuardStop:
            pass
    assert g.violations, "the op guard let aten::add through"
    compare.tensor_stats(x, y, 1e-2, 1e-2)
    compare.same_bits(x, y)
    compare.check_outputs(x, y, "cuda-agent", -1, "[preload]")  # a CPU output: fails, warms
    try:
        with torch.device("cpu"):
            torch.rand(2)
    except (AttributeError, TypeError):
        pass  # torch 1.x: no device context
    facts = {"torch": torch.__version__}
    try:  # NVML for the clocks in the audit record: imported here, initialised by each job
        import pynvml  # noqa: F401

        facts["pynvml"] = True
    except Exception:  # noqa: BLE001 (optional)
        facts["pynvml"] = False
    return facts


def main(argv, t0=None):
    """Runs one evaluation; returns the exit status. t0 (time.perf_counter()) is when the work
    on this request began: the process start, or when the zygote received the job."""
    t0 = _T0 if t0 is None else t0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True)
    ap.add_argument("--result", required=True)
    args = ap.parse_args(argv)
    mode = "verify"
    result = new_result(mode)
    try:
        with open(args.request) as f:
            request = json.load(f)
        if request.get("format") != FORMAT_REQUEST or request.get("version") != VERSION:
            raise HarnessError("invalid_input", "harness.request",
                               "not a %s version %d" % (FORMAT_REQUEST, VERSION))
        mode = request.get("mode", "verify")
        result["mode"] = mode
        if mode not in ("verify", "benchmark", "profile"):
            raise HarnessError("invalid_input", "harness.request", "unknown mode '%s'" % mode)
        options = dict(DEFAULT_OPTIONS)
        options.update(request.get("options") or {})
        try:
            tolerance.tolerance_for(options["tolerance_profile"], "float32")
        except ValueError as e:
            raise HarnessError("invalid_input", "harness.request", str(e))
        start_rss_watchdog(int(options["rss_limit_bytes"]), args.result, result)
        try:
            import evaluate  # torch is imported here, after the request is known to be sane
        except ImportError as e:
            raise HarnessError("unavailable", "harness.no_torch",
                               "this node's python cannot import the harness's needs: %s" % e)

        evaluate.run(request, options, result, t0)
    except HarnessError as e:
        result["ok"] = False
        result["error"] = {"category": e.category, "code": e.code, "message": e.message}
    except Exception as e:  # noqa: BLE001 (an unexpected harness failure is still a result)
        import traceback

        result["ok"] = False
        result["error"] = {"category": "internal", "code": "harness.internal",
                           "message": "%s: %s\n%s" % (type(e).__name__, e,
                                                      traceback.format_exc()[-2000:])}
    result["breakdown_s"]["total"] = time.perf_counter() - t0
    write_result(args.result, result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # os._exit: threads or atexit hooks the solution may have left behind do not run.
    os._exit(code)
