#!/usr/bin/env python3
"""Where a run's episodes spent their time, from `cuda-agent trajectories show --transcript` text.

Usage: cuda-agent trajectories show ID... --store S --run R --transcript | scripts/demo_times.py

Reads the turn headers ("--- turn 3: the policy (451 tokens, version 0, 2.31 s)", "--- turn 4: the
tools (0.01 s)") and the bench reports' "time: harness 1.53 s wall (startup 0.01, checks 0.40, ...)"
lines, and prints per kind of turn (the policy's generations, tool turns that compiled, tool turns
that ran the final evaluation, other tool turns) the count, the median and the total seconds, then
the harness's wall time and its phases summed over every bench report. A tool turn's time includes
its wait in the compile farm's or the bench pool's queue; the harness's does not.
"""
import re
import statistics
import sys

TURN = re.compile(r"^--- turn \d+: the (policy|tools) \(.*?([0-9.]+) s\)$")
HARNESS = re.compile(r"^time: harness ([0-9.]+) s wall(?: \((.*)\))?$")


def summarise(lines):
    times = {}  # kind -> [seconds]
    harness, phases = [], {}
    built = []  # harness seconds of the runs that built the torch.compile baseline
    finals = []  # (turn seconds, harness seconds) of each final-evaluation turn
    kind, seconds = None, 0.0
    body = []
    turn_harness = 0.0  # harness seconds reported in the current turn

    def close():
        if kind is None:
            return
        k = "policy"
        if kind == "tools":
            text = "\n".join(body)
            k = ("tools: final evaluation" if "[final_evaluation" in text
                 else "tools: compile" if re.search(r"^(compiled |nvcc on )", text, re.M)
                 else "tools: other")
            if k == "tools: final evaluation":
                finals.append((seconds, turn_harness))
        times.setdefault(k, []).append(seconds)

    for line in lines:
        line = line.rstrip("\n")
        m = TURN.match(line)
        if m or line.startswith("episode "):
            close()
            kind, seconds, body = (m.group(1), float(m.group(2)), []) if m else (None, 0.0, [])
            turn_harness = 0.0
            continue
        body.append(line)
        h = HARNESS.match(line)
        if h:
            harness.append(float(h.group(1)))
            turn_harness += float(h.group(1))
            for part in (h.group(2) or "").split(", "):
                name, _, value = part.rpartition(" ")
                if name:
                    phases[name] = phases.get(name, 0.0) + float(value)
                if name == "compile_baseline_build":
                    built.append(float(h.group(1)))
    close()
    return times, harness, phases, built, finals


def main():
    times, harness, phases, built, finals = summarise(sys.stdin)
    print("%-26s %6s %10s %10s" % ("turns", "count", "median s", "total s"))
    for k in sorted(times):
        v = times[k]
        print("%-26s %6d %10.2f %10.1f" % (k, len(v), statistics.median(v), sum(v)))
    if harness:
        print("bench harness: %d runs, median %.2f s, total %.1f s; by phase (total s): %s" % (
            len(harness), statistics.median(harness), sum(harness),
            ", ".join("%s %.1f" % (k, v) for k, v in sorted(phases.items(), key=lambda x: -x[1]))))
        # The runs that timed eager and torch.compile (a task new to the worker, or a final
        # evaluation that re-measures) against those that took the worker's cached medians.
        print("  %d of %d runs built torch.compile and timed the baselines (%.1f s in all, median "
              "%.2f s); the others %.1f s in all" % (
                  len(built), len(harness), sum(built),
                  statistics.median(built) if built else 0.0, sum(harness) - sum(built)))
    else:
        print("bench harness: no report with a harness time")
    timed = [(t, h) for t, h in finals if t > 0]  # turns stored before they were timed read 0
    if timed:
        # A final evaluation's turn time minus its harness time: the wait in the bench pool's
        # queue and the transfers (a bench-bound run shows it here).
        waits = [t - h for t, h in timed]
        print("final evaluations: %d timed, %.1f s in their turns, %.1f s of it in the harness; "
              "queue and transfer median %.2f s, total %.1f s" % (
                  len(timed), sum(t for t, _ in timed), sum(h for _, h in timed),
                  statistics.median(waits), sum(waits)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
