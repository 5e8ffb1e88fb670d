#!/usr/bin/env python3
"""Compares two `cuda-agent eval` runs on the same tasks and seeds (issue 25's figures).

Usage: scripts/demo_compare.py BASE/episodes.jsonl NEW/episodes.jsonl [--json OUT]

Prints, for each run, the mean reward over its scored episodes, the share of correct episodes and
of episodes faster than eager, then NEW minus BASE: the mean reward difference with a 95% bootstrap
interval over tasks (10,000 resamples of the task list, seed 0; a task's episodes move together),
and the ratio of faster-than-eager rates. Only tasks with scored episodes in both runs count. An
aborted episode (a policy server or tool failed, not the policy) is not scored: it is counted and
left out, never taken as a reward of 0.
"""
import json
import random
import sys


def load(path):
    by_task = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        by_task.setdefault(r["task"], []).append(r)
    return by_task


def scored(rows):
    """The episodes that count: an aborted one (a policy server or tool failed, not the policy)
    is not scored."""
    return [r for r in rows if r.get("status") != "aborted"]


def stats(rows):
    aborted = len(rows) - len(scored(rows))
    rows = scored(rows)
    n = len(rows)
    mean = sum(float(r.get("reward", 0.0)) for r in rows) / n if n else float("nan")
    correct = sum(bool(r.get("correct")) for r in rows) / n if n else float("nan")
    faster = sum(bool(r.get("correct")) and float(r.get("speedup_vs_eager") or 0) > 1.0
                 for r in rows) / n if n else float("nan")
    # The share of episodes with a malformed tool call: a policy whose tool-call format breaks
    # (session 28's RL with the critic's advantages: 1 of 32 -> 9 of 32) shows it here first.
    invalid = sum(int(r.get("invalid_tool_calls") or 0) > 0 for r in rows) / n if n else float("nan")
    # Every scored reward should come with the stored evaluation record it was read from (same
    # reward) and, under the full reward, that record's audit (`cuda-agent eval`'s episodes.jsonl
    # names both; rows written before it did have neither).
    recorded = sum("evaluation" in r and float(r.get("evaluation_reward", "nan")) ==
                   float(r.get("reward", 0.0)) for r in rows)
    audited = sum(bool(r.get("audit_sha256")) for r in rows)
    return {"episodes": n, "aborted": aborted, "mean_reward": mean, "correct_rate": correct,
            "faster_than_eager_rate": faster, "invalid_tool_call_rate": invalid,
            "with_record": recorded, "with_audit": audited}


def compare(base, new):
    """NEW minus BASE over the tasks both hold: figures as a dict (see the module's text)."""
    tasks = sorted(t for t in set(base) & set(new) if scored(base[t]) and scored(new[t]))
    if not tasks:
        raise ValueError("no task in common")
    b = stats([r for t in tasks for r in base[t]])
    n = stats([r for t in tasks for r in new[t]])

    def task_mean(runs, t):
        rows = scored(runs[t])
        return sum(float(r.get("reward", 0.0)) for r in rows) / len(rows)

    diffs = [task_mean(new, t) - task_mean(base, t) for t in tasks]
    rng = random.Random(0)
    boots = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(10000))
    return {"tasks": len(tasks), "base": b, "new": n,
            "mean_reward_difference": sum(diffs) / len(diffs), "ci95": [boots[249], boots[9749]],
            "faster_ratio": (n["faster_than_eager_rate"] / b["faster_than_eager_rate"]
                             if b["faster_than_eager_rate"] > 0 else None)}


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    try:
        out = compare(load(argv[1]), load(argv[2]))
    except ValueError:
        sys.exit("no task in common between %s and %s" % (argv[1], argv[2]))
    for name in ("base", "new"):
        s = out[name]
        print("%-4s %3d episodes scored (%d aborted, not scored): mean reward %+.3f, correct %.2f, "
              "faster than eager %.2f, with an invalid tool call %.2f; rewards with their stored "
              "evaluation record %d, with its audit %d" % (
                  name, s["episodes"], s["aborted"], s["mean_reward"], s["correct_rate"],
                  s["faster_than_eager_rate"], s["invalid_tool_call_rate"], s["with_record"],
                  s["with_audit"]))
    lo, hi = out["ci95"]
    print("new - base over %d tasks: %+.3f (95%% bootstrap interval over tasks %+.3f .. %+.3f)%s" %
          (out["tasks"], out["mean_reward_difference"], lo, hi,
           "" if out["faster_ratio"] is None else "; faster-than-eager ratio %.2fx" % out["faster_ratio"]))
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
