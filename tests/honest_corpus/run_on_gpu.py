#!/usr/bin/env python3
"""Evaluates every honest-corpus solution (tests/honest_corpus/README.md, issue 28 item 1) with
`cuda-agent bench --mode verify` on a GPU node and checks that none is refused and every one is
judged correct.

  python3 tests/honest_corpus/run_on_gpu.py --cuda-agent build-gpu/cli/cuda-agent \
      --out /tmp/honest_corpus_gpu.json

Each entry runs as `cuda-agent bench --task <entry>/model.py --solution <entry> --mode verify
--json` (the call and the verdicts of scripts/gpu/run_bench_suite.py, reused from there). An entry
passes when the report says ok with reward tier >= 1 (correct; speed is not the question here).
It prints one line per entry and a table at the end, writes every report to --out, and exits 1
when any entry is refused, incorrect or did not run (an entry that could not run is retried
once, alone). Without a GPU it prints "[  SKIPPED ]" and
exits 0, so the ctest entry honest_corpus_gpu (label gpu) skips.

--mode benchmark times every entry instead (one at a time; slow: about a minute per entry).
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_suite_runner():
    path = os.path.join(ROOT, "scripts", "gpu", "run_bench_suite.py")
    spec = importlib.util.spec_from_file_location("run_bench_suite", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def have_gpu():
    try:
        import torch  # noqa: F401  (the bench itself needs it too)
        return torch.cuda.is_available()
    except Exception:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cuda-agent", default="build-gpu/cli/cuda-agent")
    ap.add_argument("--corpus", default=HERE)
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--mode", choices=["verify", "benchmark"], default="verify")
    ap.add_argument("--jobs", type=int, default=2,
                    help="verify runs at once (several level-1 tasks hold tens of GB each)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per entry")
    ap.add_argument("--store", default="", help="run store for benchmark mode")
    ap.add_argument("--out", default="honest_corpus_gpu.json")
    a = ap.parse_args()

    if not have_gpu():
        print("[  SKIPPED ] no CUDA GPU visible to torch on this machine")
        return 0
    suite = load_suite_runner()
    only = set(filter(None, a.only.split(",")))
    entries = []
    for name in sorted(os.listdir(a.corpus)):
        d = os.path.join(a.corpus, name)
        if not os.path.isdir(os.path.join(d, "kernels")) or (only and name not in only):
            continue
        with open(os.path.join(d, "expect.json")) as f:
            entries.append({"kind": "honest", "name": name, "dir": d, "expect": json.load(f)})

    results = {}

    def record(e, report, seconds):
        verdict, tier, reasons = suite.classify(report)
        ok = verdict in ("pass", "no_speed_credit")
        results[e["name"]] = {
            "verdict": verdict, "tier": tier, "ok": ok, "reasons": reasons,
            "seconds": round(seconds, 1), "styles": e["expect"].get("styles", []),
            "task": e["expect"].get("task"),
            "speedup_vs_eager": report.get("speedup_vs_eager"),
            "notes": report.get("notes"), "checks_run": (report.get("audit") or {}).get("checks_run"),
            "error": report.get("error")}
        print(f"{'ok ' if ok else 'BAD'} {e['name']}: {verdict} (tier {tier}, {seconds:.1f} s)"
              + ("; " + " | ".join(reasons)[:400] if reasons and not ok else ""), flush=True)

    t0 = time.time()
    jobs = max(1, a.jobs) if a.mode == "verify" else 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(suite.run_bench, a.cuda_agent, e, a.mode, a.store or None, 0,
                               a.timeout): e for e in entries}
        for f in concurrent.futures.as_completed(futures):
            report, seconds = f.result()
            record(futures[f], report, seconds)

    # An evaluation that could not run (verdict "error": out of GPU memory beside another entry,
    # a timeout) is retried once, alone.
    retry = [e for e in entries if results[e["name"]]["verdict"] == "error"]
    for e in retry:
        print(f"retrying {e['name']} alone", flush=True)
        report, seconds = suite.run_bench(a.cuda_agent, e, a.mode, a.store or None, 0, a.timeout)
        record(e, report, seconds)

    bad = sorted(k for k, r in results.items() if not r["ok"])
    refused = sorted(k for k, r in results.items() if r["verdict"] == "rejected"
                     and str((r["error"] or {}).get("code", "")).startswith("compile."))
    print(f"\n{'entry':48} {'verdict':16} {'tier':>4} {'s':>6}")
    for k in sorted(results):
        r = results[k]
        print(f"{k:48} {r['verdict']:16} {str(r['tier']):>4} {r['seconds']:6.1f}")
    print(f"\n{len(results) - len(bad)} of {len(results)} honest solutions evaluated correct; "
          f"{len(refused)} refused by the compile farm; {time.time() - t0:.0f} s")
    if bad:
        print("not passing: " + ", ".join(bad))
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
