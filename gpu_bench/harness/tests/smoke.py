"""GPU smoke test of the harness alone (no C++): builds the DESIGN.md example kernel with nvcc,
then runs the harness on an honest solution and a few attacks, one line per scenario.

    python3 gpu_bench/harness/tests/smoke.py OUTDIR [--all]

Each scenario states what the harness must conclude; the script exits 1 if any disagrees.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SMOKE = os.path.join(HERE, "smoke")
TASK = os.path.join(HERE, "..", "..", "testdata", "scale_relu")
HARNESS = os.path.join(HERE, "..", "harness.py")
PROTOTYPES = [{"name": "scale_relu_launch", "params": [
    {"name": "x", "c_type": "const float*", "kind": "pointer"},
    {"name": "y", "c_type": "float*", "kind": "pointer"},
    {"name": "n", "c_type": "long long", "kind": "integer"},
    {"name": "s", "c_type": "cudaStream_t", "kind": "stream"}]}]

# (solution, mode, expect passed, expected failing check or violation substring). The first
# QUICK ones run by default (the rest are also in gpu_bench/bench_gpu_test.cpp); --all runs all.
QUICK = 4
SCENARIOS = [
    ("uninit_tail.py", "verify", False, "tolerance"),
    ("torch_op.py", "verify", False, "forbidden_op"),
    ("honest.py", "profile", True, ""),
    ("stale_cache.py", "benchmark", False, ""),
    ("honest.py", "benchmark", True, ""),
    ("wrong_dtype.py", "verify", False, "launch"),
    ("no_launch.py", "verify", False, "no_kernel_launched"),
    ("import_os.py", "verify", False, "ast.forbidden_import"),
]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0] if args else "/tmp/harness-smoke"
    scenarios = SCENARIOS if "--all" in sys.argv else SCENARIOS[:QUICK]
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, "solution.so")
    t = time.time()
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                    "-cudart", "shared", "-o", so, os.path.join(TASK, "kernels", "scale_relu.cu")],
                   check=True)
    print("nvcc: %.1f s" % (time.time() - t))
    bad = 0
    for i, (solution, mode, want_pass, want) in enumerate(scenarios):
        req = {"format": "cuda-agent-harness-request", "version": 1, "mode": mode,
               "task_model_py": os.path.join(TASK, "model.py"),
               "model_new_py": os.path.join(TASK if solution == "honest.py" else SMOKE,
                                                 "model_new.py" if solution == "honest.py" else solution), "library": so,
               "prototypes": PROTOTYPES, "device": 0, "seeds": [1, 2, 3],
               "options": {"verify_input_sets": 3, "timed_trials": 40, "warmup_trials": 5}}
        rq = os.path.join(out, "req%d.json" % i)
        rs = os.path.join(out, "res%d.json" % i)
        with open(rq, "w") as f:
            json.dump(req, f)
        t = time.time()
        p = subprocess.run([sys.executable, "-I", "-B", HARNESS, "--request", rq, "--result", rs],
                           capture_output=True, text=True)
        wall = time.time() - t
        try:
            with open(rs) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print("%-16s %-9s NO RESULT rc=%d %s\n%s" % (solution, mode, p.returncode, e,
                                                        p.stdout[-3000:] + p.stderr[-3000:]))
            bad += 1
            continue
        failed = [c["name"] + ": " + c["message"][:160] for c in r["checks"] if not c["passed"]]
        rules = [v["rule"] for v in r["violations"]]
        text = " ".join(failed + rules)
        agree = r["ok"] and r["passed"] == want_pass and (want in text)
        bad += 0 if agree else 1
        timing = r.get("timing") or {}
        med = {k: round(v["median"], 1) for k, v in (timing.get("summary") or {}).items()}
        print("%-16s %-9s %s passed=%s wall=%.1fs breakdown=%s medians_us=%s speedup=%s\n   %s"
              % (solution, mode, "OK  " if agree else "BAD ", r["passed"], wall,
                 {k: round(v, 2) for k, v in r["breakdown_s"].items()}, med,
                 {k: round(v, 3) for k, v in (timing.get("speedup") or {}).items()},
                 (text or "(no failures)")[:400]))
        if r.get("error"):
            print("   error:", json.dumps(r["error"])[:1500])
        if r.get("profile_report"):
            print("   " + r["profile_report"].replace("\n", "\n   ")[:1500])
        if solution == "honest.py" and mode == "benchmark":
            print("   versions:", json.dumps(r["versions"]))
            print("   flags:", r["precision_flags"][:2], "notes:", r["notes"][:3])
    print("smoke: %d of %d scenarios disagree" % (bad, len(scenarios)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
