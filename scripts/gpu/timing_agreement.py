#!/usr/bin/env python3
"""Issue 28 item 3: does the bench's speedup agree with an independent CUDA-event measurement of
the same forward calls, from 5 us to 5 ms kernels, and what does the launcher path cost per call?

For each entry (ENTRIES below: honest solutions of tests/bench_suite/honest and
tests/honest_corpus, some on smaller inputs so that the kernels span 5 us to 5 ms):

  bench        `cuda-agent bench --mode benchmark --json --keep-job` (the reward's path: compile
               farm, sandbox, harness); its speedup vs eager, its medians, and from the kept
               harness result how many trials the wall clock decided.
  independent  scripts/gpu/independent_timing.py, in its own process, sharing no code with the
               harness: the same artifact (the job's solution.so) loaded with plain ctypes, no
               argument checks, the task's Model and the entry's ModelNew on the task's inputs.
               Per trial: device synchronise, L2 flush (zero max(4 x L2, 64 MiB), the bench's
               size), start event, forward, end event, synchronise ("covered": the host's time to
               the first launch passes while the flush runs). Also "synced" (synchronise after
               the flush, so that time counts: the KernelBench way) and the host time of one
               forward call, for the reader.

agree: |bench speedup / independent (covered) speedup - 1| <= 3%.

Then the launcher micro-benchmark: an extern "C" function that does nothing, and one that launches
an empty kernel, called through the harness's `kernels` module (gpu_bench/harness/launchers.py)
and through a bare ctypes call with precomputed arguments; the difference is the launcher path's
per-call overhead (issue 28: <= 3 us). With the per-call cost of the pieces an older launcher used
(torch.cuda.current_stream(), tensor.device) and the event time of a forward-shaped call under
the pre-issue-28 bracket (synchronise, start, call, end: host latency counted) and the new one.

Budget (default 240 s, --budget-s): the compile farm's cache is warmed for every distinct solution
in parallel first; each bench run gets at most 60 s (typically 10-20 s: zygote start, CUDA, one
input set checked, torch.compile of the task, 30 trials per contender); no bench run starts once
fewer than 50 s are left, which go to the independent measurements (one child process for all
entries, typically 1-3 s each, restarted without the entry it died on) and the launcher
micro-benchmark. An entry that fails or times out is reported as such; the rest go on.

Run on the GPU node from the repository root, after build-gpu/ is built (stage `agree` of
scripts/gpu/stages-node-run does):

    python3 scripts/gpu/timing_agreement.py --out /tmp/agree.json

Exit status 0 always; the JSON summary (--out) says what agreed.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGREE = 0.03
BENCH_ENTRY_S = 60
RESERVE_S = 50
RESIZE_COLS = 1024

# (name, entry directory under tests/, floats to resize its x to or None, why it is here). The
# order is the run order: the range is covered early, in case the budget runs out.
ENTRIES = [
    ("swish_2^26", "bench_suite/honest/03_swish", 1 << 26,
     "the issue's case: one fused elementwise kernel over 2^26 floats (eager: two kernels)"),
    ("relu_2^20", "bench_suite/honest/01_relu", 1 << 20, "about 5 us: the smallest kernel"),
    ("10_gemm_add_relu", "bench_suite/honest/10_gemm_add_relu", None,
     "about 2.7 ms: cuBLAS GEMM plus an epilogue launcher, two launches"),
    ("tanh_2^21", "honest_corpus/l1_22_tanh_forceinline_float4", 1 << 21,
     "about 7 us, a second elementwise solution (float4, __forceinline__)"),
    ("12_matmul_sum_max_avgpool_lse", "bench_suite/honest/12_matmul_sum_max_avgpool_lse", None,
     "about 0.12 ms: a GEMV in place of eager's GEMM, four temporaries allocated per call"),
    ("09_hinge_loss", "bench_suite/honest/09_hinge_loss", None,
     "about 1.1 ms: a reduction to one value (float64 partials)"),
    ("swish_2^22", "bench_suite/honest/03_swish", 1 << 22, "about 12 us"),
    ("06_layer_norm", "bench_suite/honest/06_layer_norm", None,
     "about 0.3 ms: ten launcher arguments, two temporaries; the 2026-12-03 table's widest gap"),
    ("l1_12_diag_matmul", "honest_corpus/l1_12_diag_matmul_2d_template", None,
     "about 40 us against eager's full GEMM (flagged implausible_speedup, which does not fail)"),
    ("05_softmax", "bench_suite/honest/05_softmax", None, "about 4.7 ms: the largest kernel"),
    ("relu_2^24", "bench_suite/honest/01_relu", 1 << 24, "about 45 us"),
    ("02_mingpt_new_gelu", "bench_suite/honest/02_mingpt_new_gelu", None,
     "about 0.13 ms against eager's eight kernels"),
    ("08_mse_loss", "bench_suite/honest/08_mse_loss", None, "about 2 ms: two 4 GiB inputs"),
    ("l3_mlp_cublas_bias_relu", "honest_corpus/l3_mlp_cublas_bias_relu", None,
     "about 0.15 ms: six launches per forward (cuBLAS), a host-heavy forward"),
]

EMPTY_CU = r"""
#include <cuda_runtime.h>
__global__ void empty_kernel(const float* x, float* y, long long n) {}
extern "C" void empty_launch(const float* x, float* y, long long n, cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>(x, y, n);
}
extern "C" void host_only(const float* x, float* y, long long n, cudaStream_t stream) {
  (void)x; (void)y; (void)n; (void)stream;
}
"""
def log(msg):
    print("[agree %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ---------------------------------------------------------------------------------------------
# Entries, the compile cache, the bench runs, the independent process


def prepare_entry(name, rel, floats, work):
    """The entry's directory; a resized one is a copy whose model.py draws `floats` elements."""
    src = os.path.join(REPO, "tests", rel)
    if floats is None:
        return src
    dst = os.path.join(work, "entries", name.replace("^", "p"))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    path = os.path.join(dst, "model.py")
    with open(path) as f:
        text = f.read()
    text, n1 = re.subn(r"(?m)^batch_size\s*=.*$", "batch_size = %d" % (floats // RESIZE_COLS), text)
    text, n2 = re.subn(r"(?m)^dim\s*=.*$", "dim = %d" % RESIZE_COLS, text)
    if n1 != 1 or n2 != 1:
        raise RuntimeError("%s: cannot resize (batch_size/dim lines: %d/%d)" % (rel, n1, n2))
    with open(path, "w") as f:
        f.write(text)
    return dst


def warm_compile_cache(cli, dirs, deadline):
    """`cuda-agent compile` of each solution directory, four at a time: the bench's embedded farm
    then finds them in the per-user cache (copies of one solution are built once)."""
    def one(d):
        try:
            p = subprocess.run([cli, "--log-level", "error", "compile", d, "--json"],
                               capture_output=True, text=True,
                               timeout=max(5, deadline - time.time()))
            return d, p.returncode
        except subprocess.TimeoutExpired:
            return d, "timeout"
    with ThreadPoolExecutor(4) as pool:
        for d, rc in pool.map(one, dirs):
            if rc != 0:
                log("compile %s: %s (the bench run builds it again)" % (d, rc))


def build_empty_so(nvcc, arch, work):
    cu = os.path.join(work, "empty.cu")
    so = os.path.join(work, "empty.so")
    with open(cu, "w") as f:
        f.write(EMPTY_CU)
    p = subprocess.run([nvcc, "-O2", "-arch=" + arch, "-shared", "-Xcompiler", "-fPIC",
                        "-cudart", "shared", "-o", so, cu], capture_output=True, text=True,
                       timeout=180)
    if p.returncode != 0:
        raise RuntimeError("nvcc: " + (p.stdout + p.stderr)[-2000:])
    return so


def first_json(text):
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None


def run_bench(cli, task, solution, trials, seeds, timeout_s, keep_dir):
    """One `cuda-agent bench --mode benchmark`; returns its row (report, kept job's files)."""
    row = {}
    cmd = [cli, "--log-level", "error", "bench", "--task", task, "--solution", solution,
           "--mode", "benchmark", "--json", "--trials", str(trials), "--seeds", str(seeds),
           "--keep-job", "--timeout-ms", str(int(timeout_s * 1000))]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    work_root = os.path.join(os.environ.get("TMPDIR") or "/tmp", "cuda-agent-bench-%d" % p.pid)
    try:
        out, err = p.communicate(timeout=timeout_s + 20)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        row["error"] = "bench: no answer in %d s" % (timeout_s + 20)
    row["bench_s"] = round(time.time() - t0, 1)
    report = first_json(out)
    if report is None:
        row.setdefault("error", "bench: no JSON (exit %s): %s" % (p.returncode,
                                                                  (out + err)[-1500:]))
    elif not report.get("ok", False):
        row["error"] = "bench: %s" % json.dumps(report.get("error"))[:1500]
    else:
        spread = report.get("spread_us") or {}
        row.update({
            "bench_passed": report.get("passed"),
            "bench_tier": (report.get("reward") or {}).get("tier"),
            "bench_speedup": report.get("speedup_vs_eager"),
            "bench_candidate_us": (spread.get("candidate") or {}).get("median"),
            "bench_eager_us": (spread.get("eager") or {}).get("median"),
            "bench_cv": [(spread.get(k) or {}).get("cv") for k in ("candidate", "eager")],
            "bench_violations": [v.get("rule") for v in report.get("violations") or []],
        })
        if not report.get("passed"):
            failed = [c for c in report.get("checks") or [] if not c.get("passed")]
            row["error"] = "bench: not passed: %s" % json.dumps(failed[:2])[:1500]
    jobs = sorted(glob.glob(os.path.join(work_root, "job-*", "result.json")))
    if jobs:
        job = os.path.dirname(jobs[0])
        try:
            with open(os.path.join(job, "result.json")) as f:
                timing = (json.load(f).get("timing") or {})
            row["bench_idle_us"] = timing.get("idle_overhead_us")
            row["bench_wall_decided"] = timing.get("wall_decided_trials")
            raw = timing.get("raw_event_wall_us") or {}
            row["bench_event_us"] = {k: statistics.median([r[0] for r in v]) if v else None
                                     for k, v in raw.items()}
            with open(os.path.join(job, "request.json")) as f:
                row["prototypes"] = json.load(f).get("prototypes")
            os.makedirs(keep_dir, exist_ok=True)
            row["so"] = os.path.join(keep_dir, "solution.so")
            shutil.copyfile(os.path.join(job, "solution.so"), row["so"])
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            row["job_note"] = "kept job unreadable: %s: %s" % (type(e).__name__, e)
    else:
        row["job_note"] = "no kept job under " + work_root
    shutil.rmtree(work_root, ignore_errors=True)
    return row


def run_workers(spec_rows, args, work, empty_so, deadline):
    """The independent measurements in child processes, then the launcher micro-benchmark; a
    child that dies or runs out of time loses only the entry it was on. Returns (rows by name,
    the launcher row or None, the worker's environment)."""
    results, launcher, env = {}, None, {}
    todo = list(spec_rows)
    attempt = 0
    while (todo or (launcher is None and empty_so)) and time.time() < deadline - 5:
        attempt += 1
        spec_path = os.path.join(work, "worker%d.json" % attempt)
        out_path = os.path.join(work, "worker%d.jsonl" % attempt)
        with open(spec_path, "w") as f:
            json.dump({"entries": todo, "empty_so": empty_so if launcher is None else None,
                       "trials": args.independent_trials, "cuda_home": args.cuda_home,
                       "nvcc": args.nvcc, "arch": args.arch, "work": work}, f)
        cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "independent_timing.py"), spec_path, out_path]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=max(10, deadline - time.time()))
            tail = p.stdout[-3000:]
        except subprocess.TimeoutExpired as e:
            text = e.stdout or ""
            tail = (text.decode(errors="replace") if isinstance(text, bytes) else text)[-3000:]
            tail += "\n(worker timed out)"
        sys.stdout.write(tail if tail.endswith("\n") else tail + "\n")
        if os.path.exists(out_path):
            with open(out_path) as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    if r.get("kind") == "env":
                        env = r
                    elif r.get("kind") == "fatal":  # no torch or no GPU: nothing will run
                        for e in todo:
                            results.setdefault(e["name"], {"name": e["name"],
                                                           "error": "independent: " + r["error"]})
                        launcher = launcher or {"kind": "launcher", "error": r["error"]}
                    elif r.get("kind") == "launcher":
                        launcher = r
                    elif "name" in r:
                        results[r["name"]] = r
        todo = [e for e in todo if e["name"] not in results]
        if todo:  # the child stopped on todo[0]
            results[todo[0]["name"]] = {"name": todo[0]["name"],
                                        "error": "independent: the worker died or ran out of "
                                        "time on it: " + tail[-600:]}
            todo = todo[1:]
        elif launcher is None and empty_so:
            launcher = {"kind": "launcher", "error": "the worker died or ran out of time in the "
                        "launcher micro-benchmark: " + tail[-600:]}
    return results, launcher, env


# ---------------------------------------------------------------------------------------------
# The report


def fmt(v, spec="%.2f"):
    return spec % v if isinstance(v, (int, float)) else "-"


def print_table(rows, launcher):
    print()
    print("%-30s %10s %10s %10s %10s %8s %8s %8s %6s %8s %11s %9s" % (
        "entry", "kernel us", "eager us", "bench c", "bench e", "bench x", "indep x", "b/i",
        "<=3%", "synced x", "host us c/e", "wall c/e"))
    for r in rows:
        if r.get("error") or "agree" not in r:
            why = r.get("error") or "not finished"
            print("%-30s %s" % (r["name"], why[:160].replace("\n", " ")))
            continue
        wd = r.get("bench_wall_decided") or {}
        host = r.get("host_us") or {}
        print("%-30s %10s %10s %10s %10s %8s %8s %8s %6s %8s %11s %9s" % (
            r["name"], fmt(r["kernel_us"]), fmt(r["eager_us"]), fmt(r.get("bench_candidate_us")),
            fmt(r.get("bench_eager_us")), fmt(r.get("bench_speedup"), "%.3f"),
            fmt(r["indep_speedup"], "%.3f"), fmt(r["ratio"], "%.3f"),
            "yes" if r["agree"] else "NO", fmt(r["synced_speedup"], "%.3f"),
            "%s/%s" % (fmt(host.get("kernel"), "%.0f"), fmt(host.get("eager"), "%.0f")),
            "%s/%s" % (wd.get("candidate", "-"), wd.get("eager", "-"))))
    print("kernel/eager us: independent medians (covered: the host's launch time hidden behind "
          "the flush); bench c/e: the bench's medians; b/i: bench speedup / independent; synced x:"
          " the independent speedup with the host's launch time counted; host us: one forward "
          "call's host time; wall c/e: trials the wall clock decided in the bench")
    if launcher:
        print()
        if launcher.get("error"):
            print("launcher micro-benchmark failed: " + launcher["error"])
            return
        print("launcher path, per call (us): kernels module %.2f, bare ctypes %.2f -> overhead "
              "%.2f us (no launch), %.2f us (empty kernel launched): %s" % (
                  launcher["host_us_per_call"]["kernels_module"],
                  launcher["host_us_per_call"]["ctypes_precomputed"],
                  launcher["launcher_overhead_us"], launcher["launch_overhead_us"],
                  "<= 3 us" if launcher["within_3us"] else "OVER 3 us"))
        for name, v in launcher["piece_us"].items():
            if v is not None:
                print("  %-48s %7.2f us" % (name, v))
        for name, v in launcher["forward_shaped"].items():
            print("  forward-shaped via %-18s host %6.2f us; event time: old bracket %6.2f us, "
                  "covered %6.2f us" % (name, v["host_us"], v["event_us_old_bracket"],
                                        v["event_us_covered"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="", help="the JSON summary")
    ap.add_argument("--cuda-agent", default=os.path.join(REPO, "build-gpu", "cli", "cuda-agent"))
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--trials", type=int, default=30, help="bench timed trials per contender")
    ap.add_argument("--seeds", type=int, default=1, help="bench correctness input sets")
    ap.add_argument("--independent-trials", type=int, default=40)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--nvcc", default="")
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    args.nvcc = args.nvcc or os.path.join(args.cuda_home, "bin", "nvcc")
    t_start = time.time()
    deadline = t_start + args.budget_s
    summary = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "budget_s": args.budget_s, "bench_entry_s": BENCH_ENTRY_S,
               "reserve_s": RESERVE_S, "trials": args.trials, "seeds": args.seeds,
               "independent_trials": args.independent_trials, "agree_within": AGREE}
    rows, launcher = [], None
    try:
        launcher = run_all(args, deadline, summary, rows)
    except Exception as e:  # noqa: BLE001 (exit 0 always, with what was measured)
        summary["error"] = "%s: %s" % (type(e).__name__, e)
        summary["traceback"] = traceback.format_exc()[-3000:]
        log("failed: " + summary["error"])
    for r in rows:
        r.pop("prototypes", None)
    timed = [r for r in rows if not r.get("error") and "agree" in r]
    kernel_us = [r["kernel_us"] for r in timed]
    summary.update({
        "elapsed_s": round(time.time() - t_start, 1),
        "entries": rows,
        "launcher": launcher,
        "timed": len(timed),
        "agree": sum(1 for r in timed if r["agree"]),
        "all_agree": bool(timed) and all(r["agree"] for r in timed),
        "kernel_us_range": [min(kernel_us), max(kernel_us)] if kernel_us else None,
        "launcher_overhead_us": (launcher or {}).get("launcher_overhead_us"),
        "launch_overhead_us": (launcher or {}).get("launch_overhead_us"),
        "launcher_within_3us": (launcher or {}).get("within_3us"),
    })
    print_table(rows, launcher)
    print("\n%d of %d entries timed by both; %d agree within %.0f%%; kernels %s us; %.0f s" % (
        len(timed), len(rows), summary["agree"], AGREE * 100,
        "%.1f-%.1f" % tuple(summary["kernel_us_range"]) if kernel_us else "-",
        summary["elapsed_s"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
        print("summary: " + args.out)
    return 0


def run_all(args, deadline, summary, prepared):
    """Fills `prepared` with one row per entry as it goes (so that a failure keeps what was
    measured) and returns the launcher micro-benchmark's row."""
    entries = ENTRIES
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        entries = [e for e in ENTRIES if e[0] in wanted]
    work = args.work or tempfile.mkdtemp(prefix="timing_agreement_")
    os.makedirs(work, exist_ok=True)
    summary["work"] = work
    if not os.access(args.cuda_agent, os.X_OK):
        raise RuntimeError("no cuda-agent at %s (build build-gpu/ first)" % args.cuda_agent)
    for name, rel, floats, why in entries:
        d = prepare_entry(name, rel, floats, work)
        prepared.append({"name": name, "source": "tests/" + rel, "floats": floats, "why": why,
                         "dir": d, "task": os.path.join(d, "model.py")})
    empty = {}

    def build_empty():
        try:
            empty["so"] = build_empty_so(args.nvcc, args.arch, work)
        except Exception as e:  # noqa: BLE001 (reported in the launcher row)
            empty["error"] = "%s: %s" % (type(e).__name__, e)
    builder = threading.Thread(target=build_empty)
    builder.start()
    t = time.time()
    warm_compile_cache(args.cuda_agent, sorted({e["dir"] for e in prepared}),
                       min(deadline, t + 60))
    log("compile cache warm in %.0f s" % (time.time() - t))
    bench_deadline = deadline - RESERVE_S
    for e in prepared:
        left = bench_deadline - time.time()
        if left < 15:
            e["error"] = "skipped: no time left in the budget for its bench run"
            continue
        timeout_s = min(BENCH_ENTRY_S, left)
        log("bench %s (at most %.0f s)" % (e["name"], timeout_s))
        e.update(run_bench(args.cuda_agent, e["task"], e["dir"], args.trials, args.seeds,
                           timeout_s, os.path.join(work, "kept", e["name"].replace("^", "p"))))
        log("bench %s: %s in %s s" % (e["name"], e.get("error") or "%sx (cand %s us, eager %s us)"
                                      % (fmt(e.get("bench_speedup"), "%.3f"),
                                         fmt(e.get("bench_candidate_us")),
                                         fmt(e.get("bench_eager_us"))), e["bench_s"]))
    builder.join(timeout=max(1, deadline - time.time()))
    measurable = [e for e in prepared if not e.get("error")]
    results, launcher, env = run_workers(measurable, args, work, empty.get("so"), deadline)
    summary["env"] = env
    if launcher is None:
        launcher = {"kind": "launcher", "error": empty.get("error") or "not run (no time left)"}
    for e in prepared:
        if e.get("error"):
            continue
        r = results.get(e["name"], {"error": "independent: not measured (no time left)"})
        e.update({k: v for k, v in r.items() if k != "name"})
        if e.get("error"):
            continue
        if not e.get("bench_speedup"):
            e["error"] = "bench: no speedup vs eager in its report"
            continue
        e["ratio"] = e["bench_speedup"] / e["indep_speedup"]
        e["agree"] = abs(e["ratio"] - 1.0) <= AGREE
    return launcher


if __name__ == "__main__":
    sys.exit(main())
