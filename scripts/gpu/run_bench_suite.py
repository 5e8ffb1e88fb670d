#!/usr/bin/env python3
"""Runs the attack and honest suites (tests/bench_suite) through `cuda-agent bench` on a GPU node
and checks every verdict against the entry's expect.json.

  scripts/gpu/run_bench_suite.py --cuda-agent build-gpu/cli/cuda-agent --out suite.json

Verdicts, from the bench's JSON report:
  rejected         the build was refused (compile.policy) or the reward tier is -1 (a check failed
                   or a rule was broken); the reason is the error code, the failed checks and the
                   violations
  no_speed_credit  rejected, or correct with reward tier <= 1 (no credit for speed)
  pass             correct, reward tier >= 1

An attack is handled when its verdict is what expect.json says or stricter (a "no_speed_credit"
attack that is rejected outright is handled). An honest entry must pass. Attacks expected to be
rejected run in verify mode, several at once (correctness does not need a quiet GPU); attacks
expected to get no speed credit, and honest entries, run in benchmark mode one at a time, sharing
one run store so baselines of the same task are measured once. Exit status: 0 when every entry
is handled, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time


def load_entries(suite, only, names=None):
    entries = []
    for kind in ("attacks", "honest"):
        if only and kind != only:
            continue
        root = os.path.join(suite, kind)
        for name in sorted(os.listdir(root)):
            if names and name not in names:
                continue
            d = os.path.join(root, name)
            exp = os.path.join(d, "expect.json")
            if os.path.isfile(exp):
                with open(exp) as f:
                    entries.append({"kind": kind, "name": name, "dir": d, "expect": json.load(f)})
    return entries


def run_bench(exe, entry, mode, store, trials, timeout_s):
    cmd = [exe, "--log-level", "error", "bench", "--task", os.path.join(entry["dir"], "model.py"),
           "--solution", entry["dir"], "--mode", mode, "--json", "--timeout-ms",
           str(timeout_s * 1000)]
    if store:
        cmd += ["--store", store]
    if trials and mode == "benchmark":
        cmd += ["--trials", str(trials)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 60)
        out = p.stdout
    except subprocess.TimeoutExpired:
        return {"error": {"code": "runner.timeout", "message": "no answer in time"}}, time.time() - t0
    start = out.find("{")
    try:
        report = json.loads(out[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        report = None
    if report is None:
        report = {"error": {"code": "runner.no_json", "message": (out + p.stderr)[-800:]}}
    return report, time.time() - t0


def classify(report):
    """(verdict, tier, reasons)"""
    if not report.get("ok", False):
        err = report.get("error", {})
        code = err.get("code", "?")
        reasons = [code + ": " + err.get("message", "").strip().replace("\n", " ")[:300]]
        # Only a refusal by the rules is a rejection; an evaluation that could not run is not.
        rejected = code.startswith("compile.") or code.startswith("bench.crashed") or \
            code.startswith("harness.") and code not in ("harness.no_gpu", "harness.internal")
        return ("rejected" if rejected else "error"), None, reasons
    tier = report.get("reward", {}).get("tier")
    reasons = [c.get("name", "?") + ": " + (c.get("message") or "")[:200]
               for c in report.get("checks", []) if not c.get("passed", True)]
    reasons += [v.get("rule", "?") + ": " + (v.get("detail") or "")[:200]
                for v in report.get("violations", [])]
    if tier is None or tier < 0:
        return "rejected", tier, reasons
    if tier <= 1:
        return "no_speed_credit", tier, reasons
    return "pass", tier, reasons


def handled(expected, verdict, kind):
    if kind == "honest":
        return verdict == "pass" or verdict == "no_speed_credit"  # correct; speed is reported
    if expected == "rejected":
        return verdict == "rejected"
    if expected == "no_speed_credit":
        return verdict in ("rejected", "no_speed_credit")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cuda-agent", default="build-gpu/cli/cuda-agent")
    ap.add_argument("--suite", default="tests/bench_suite")
    ap.add_argument("--only", choices=["attacks", "honest"])
    ap.add_argument("--names", help="comma-separated entry names (directories) to run alone")
    ap.add_argument("--store", default="/tmp/bench-suite-store")
    ap.add_argument("--jobs", type=int, default=4, help="verify-mode runs at once")
    ap.add_argument("--trials", type=int, default=0, help="timed trials (default: [bench])")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per entry")
    ap.add_argument("--out", default="bench_suite_results.json")
    a = ap.parse_args()

    names = set(a.names.split(",")) if a.names else None
    entries = load_entries(a.suite, a.only, names)
    if names and len(entries) != len(names):
        print("unknown entries: " + ", ".join(sorted(names - {e["name"] for e in entries})))
        return 2
    verify, timed = [], []
    for e in entries:
        expected = e["expect"].get("verdict", "pass")
        (verify if e["kind"] == "attacks" and expected == "rejected" else timed).append(e)

    results = {}

    def record(e, mode, report, seconds):
        verdict, tier, reasons = classify(report)
        expected = e["expect"].get("verdict", "pass")
        results[e["kind"] + "/" + e["name"]] = {
            "kind": e["kind"], "expected": expected, "expected_rule": e["expect"].get("rule"),
            "mode": mode, "verdict": verdict, "tier": tier, "reasons": reasons,
            "handled": handled(expected, verdict, e["kind"]), "seconds": round(seconds, 1),
            "speedup_vs_eager": report.get("speedup_vs_eager"),
            "speedup_vs_compile": report.get("speedup_vs_compile"),
            "spread_us": report.get("spread_us"), "breakdown_s": report.get("breakdown_s")}
        r = results[e["kind"] + "/" + e["name"]]
        print(f"{'ok ' if r['handled'] else 'BAD'} {e['kind']}/{e['name']}: expected {expected}, "
              f"got {verdict} (tier {tier}, {mode}, {seconds:.1f} s)"
              + (f" speedup eager {r['speedup_vs_eager']:.2f}x compile {r['speedup_vs_compile']:.2f}x"
                 if verdict in ("pass", "no_speed_credit") and r["speedup_vs_eager"] else "")
              + ("; " + " | ".join(reasons)[:400] if reasons else ""), flush=True)

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = {pool.submit(run_bench, a.cuda_agent, e, "verify", None, 0, a.timeout): e
                   for e in verify}
        for f in concurrent.futures.as_completed(futures):
            report, seconds = f.result()
            record(futures[f], "verify", report, seconds)
    for e in timed:
        report, seconds = run_bench(a.cuda_agent, e, "benchmark", a.store, a.trials, a.timeout)
        record(e, "benchmark", report, seconds)

    bad = [k for k, r in results.items() if not r["handled"]]
    attacks = [r for r in results.values() if r["kind"] == "attacks"]
    honest = [r for r in results.values() if r["kind"] == "honest"]
    print(f"\nattacks handled: {sum(r['handled'] for r in attacks)}/{len(attacks)}; honest passing: "
          f"{sum(r['handled'] for r in honest)}/{len(honest)}; "
          f"{sum(1 for r in honest if (r['speedup_vs_eager'] or 0) > 1)} honest faster than eager; "
          f"total {time.time() - t0:.0f} s")
    if bad:
        print("not handled: " + ", ".join(bad))
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
