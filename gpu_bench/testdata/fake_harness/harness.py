"""A test-only stand-in for gpu_bench/harness/harness.py (never installed): same command line,
same request and result files (docs/formats/harness.md), no torch and no GPU. model_new.py's first
line picks what it does: "# fake: <scenario>". Used by gpu_bench/bench_service_test.cpp to test
result parsing, reward scoring and error mapping on CPU machines, and (through `main(argv, t0)`,
which gpu_bench/harness/zygote.py calls in each forked job) the harness zygote: jobs that kill,
stop or taint the zygote or their own process."""

import json
import os
import signal
import sys
import time


def base():
    return {"format": "cuda-agent-harness-result", "version": 1, "mode": "verify", "ok": True,
            "passed": True, "error": None, "device_fault": False, "violations": [],
            "checks": [{"name": "policy.ast", "passed": True, "message": ""},
                       {"name": "tolerance[seed=1]", "passed": True, "max_abs_error": 1e-6,
                        "max_rel_error": 2e-6, "first_mismatch_index": -1, "message": ""}],
            "timing": None, "versions": {"torch": "2.11.0", "gpu_name": "Fake GPU",
                                         "driver": "580.1", "sm_clock_max_mhz": 1980,
                                         "mem_clock_max_mhz": 3201},
            "precision_flags": ["torch.backends.cuda.matmul.allow_tf32=False"],
            "seeds": [1], "breakdown_s": {"startup": 0.1, "checks": 0.2}, "notes": [],
            "profile_report": ""}


def timing(cand, eager, comp):
    return {"candidate_us": [cand] * 5, "eager_us": [eager] * 5 if eager else [],
            "compile_us": [comp] * 5 if comp else [],
            "summary": {"candidate": {"median": cand, "min": cand, "max": cand, "iqr": 0,
                                      "cv": 0.01}},
            "idle_overhead_us": 12.5, "compile_error": "" if comp else "no compiler"}


# Module state a job may change; the next job must see it pristine (it is forked from the zygote,
# which never ran a job).
TAINTED = []


def parent_is_zygote():
    try:
        with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
            return b"zygote.py" in f.read()
    except OSError:
        return False


def fds():
    return sorted(int(x) for x in os.listdir("/proc/self/fd"))


def main(argv=None, t0=None):
    args = sys.argv[1:] if argv is None else argv
    req_path = args[args.index("--request") + 1]
    res_path = args[args.index("--result") + 1]
    with open(req_path) as f:
        req = json.load(f)
    with open(req["model_new_py"]) as f:
        scenario = f.readline().split("fake:")[-1].strip()
    r = base()
    r["mode"] = req["mode"]
    if req["mode"] == "profile":  # under a (fake) ncu the region alone, as profile_mode.py does
        r["profile_report"] = ("ncu region: 5 forward calls" if req["options"].get("ncu_region")
                               else "fake profiler table\nper forward: 1.0 us of GPU time")
    r["seeds"] = req["seeds"] or [1]
    if scenario == "fast":  # 2x eager, 1.5x compile (each when asked to measure it)
        r["timing"] = timing(100.0, 200.0 if req["options"]["measure_eager"] else 0,
                             150.0 if req["options"]["measure_compile"] else 0)
    elif scenario == "eager_only":  # faster than eager, slower than compile
        r["timing"] = timing(100.0, 120.0, 90.0)
    elif scenario == "slow":
        r["timing"] = timing(100.0, 102.0, 101.0)
    elif scenario == "no_compile":
        r["timing"] = timing(100.0, 200.0, 0)
    elif scenario == "echo_request":  # reports what it was asked, for the request tests
        r["notes"] = [json.dumps(req), "env:" + os.environ.get("CUDA_VISIBLE_DEVICES", "")]
        r["timing"] = timing(100.0, 200.0, 150.0) if not req["options"]["measure_eager"] else None
        if r["timing"]:
            r["timing"]["eager_us"] = []
            r["timing"]["compile_us"] = []
    elif scenario == "fail_check":  # timed, then failed (a poisoned baseline must not stick)
        r["passed"] = False
        r["timing"] = timing(100.0, 900.0 if req["options"]["measure_eager"] else 0,
                             900.0 if req["options"]["measure_compile"] else 0)
        r["checks"][1].update({"passed": False, "max_abs_error": "inf", "max_rel_error": 3.5,
                               "first_mismatch_index": 17, "message": "1 of 9 out of tolerance"})
    elif scenario == "violation":
        r["passed"] = False
        r["checks"].append({"name": "op_guard[seed=1]", "passed": False,
                            "message": "aten::add.Tensor called"})
        r["violations"] = [{"rule": "forbidden_op", "detail": "aten::add.Tensor called"}]
    elif scenario == "implausible":
        r["timing"] = timing(1.0, 200.0, 150.0)
        r["violations"] = [{"rule": "implausible_speedup", "detail": "200x"}]
    elif scenario == "constant_task":  # correct and 2x faster, on a task nothing can harden
        r["timing"] = timing(100.0, 200.0, 150.0)
        r["violations"] = [{"rule": "constant_output_task", "detail": "one output for 5 sets"}]
    elif scenario == "device_fault":
        r["passed"] = False
        r["device_fault"] = True
        r["checks"][1].update({"passed": False, "message": "illegal memory access"})
    elif scenario == "task_error":
        r["ok"] = False
        r["passed"] = False
        r["error"] = {"category": "invalid_input", "code": "harness.task",
                      "message": "model.py: NameError"}
        with open(res_path, "w") as f:
            json.dump(r, f)
        return 1
    elif scenario == "crash":
        sys.stdout.write("about to crash\n")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    elif scenario == "hang":
        time.sleep(600)
    elif scenario == "hang_group":  # the main process ends; a child of its group hangs on
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        r["timing"] = timing(100.0, 200.0, 150.0)
    elif scenario in ("kill_zygote", "stop_zygote", "tamper_kill_zygote"):
        # Attacks on the zygote (only when forked from one: in a fresh child the parent is the
        # worker itself, and the job is an honest "fast" one).
        if parent_is_zygote():
            if scenario == "tamper_kill_zygote":  # a re-run must not see this
                os.remove(req["model_new_py"])  # read-only, but the directory is the job's
                with open(req["model_new_py"], "w") as f:
                    f.write("# fake: fail_check\n")
            os.kill(os.getppid(), signal.SIGSTOP if scenario == "stop_zygote" else signal.SIGKILL)
        r["timing"] = timing(100.0, 200.0, 150.0 if req["options"]["measure_compile"] else 0)
        r["notes"] = ["zygote child" if parent_is_zygote() else "fresh child"]
    elif scenario == "taint":  # changes what it can; the next job reports what it sees
        TAINTED.append("by an earlier job")
        os.environ["TAINT"] = "1"
        sys.modules["taint_module"] = sys
        r["notes"] = ["tainted"]
    elif scenario == "echo_state":  # what a job starts with
        r["notes"] = ["tainted=%s" % TAINTED, "env_taint=%s" % os.environ.get("TAINT", ""),
                      "module=%s" % ("taint_module" in sys.modules),
                      "cwd=%s" % os.getcwd(), "home=%s" % os.environ.get("HOME", ""),
                      "tmpdir=%s" % os.environ.get("TMPDIR", ""),
                      "fds=%s" % ",".join(str(x) for x in fds()),
                      "own_group=%s" % (os.getpgid(0) == os.getpid()),
                      "parent_is_zygote=%s" % parent_is_zygote()]
    elif scenario == "garbage":
        with open(res_path, "w") as f:
            f.write("{not json")
        return 0
    elif scenario == "no_result":
        return 0
    with open(res_path, "w") as f:
        json.dump(r, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
