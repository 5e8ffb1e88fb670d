#!/usr/bin/env python3
"""Which tasks give one output for any input, and whether re-drawn weights expose a stored answer
there (issue 28 item 2), with the harness's own code (gpu_bench/harness/evaluate.py): for each
task file, the reference is built as the harness builds it (eval mode, weights drawn under a
seed), run on --sets input sets, and judged input-insensitive exactly as the harness judges it
(`input_insensitive`: every output would pass the checks against the first). For those, the first
output is kept as the stored answer an attack would replay; the weights are re-drawn in place, as
the harness's `weights[...]` check does, and the stored answer is judged against the reference's
new output (`passes_for`). Verdicts:

  input-sensitive   the checks that vary the inputs already tell a stored answer apart
  hardened          input-insensitive; the stored answer fails against re-drawn weights, so the
                    harness rejects it (violation ignores_weights)
  hardened by input I M
                    no weights, or re-drawn weights change nothing, but input I moved (M: x4,
                    +1; evaluate.first_telling_move) moves the output: the stored answer fails
                    there (violation ignores_inputs)
  constant          nothing of that changes the output, and the output does not
                    change with the inputs (evaluate.constant_output):
                    flagged constant_output_task, no speed credit
  not hardened      as constant, but the output changes with the inputs by more than that
                    (less than the tolerance): a note, the speed credit stays

  python3 scripts/gpu/constant_tasks.py --tasks .kb/level3 --json out.json
  python3 scripts/gpu/constant_tasks.py --tasks ../shared/kernelbench/level1 --json l1.json
"""
import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "gpu_bench", "harness"))

import torch  # noqa: E402

import evaluate  # noqa: E402


def judge(path, sets, seed, profile):
    result = {"checks": [], "violations": [], "notes": [], "breakdown_s": {}}
    s = evaluate.Session({"task_model_py": path, "device": 0}, {"tolerance_profile": profile},
                         result)
    s.load_task()
    rng = random.Random(seed)
    torch.manual_seed(rng.getrandbits(63))
    with torch.device(s.dev_name):
        s.init_inputs = s.task.get_init_inputs()
        s.ref = s.task.Model(*s.init_inputs).to(s.dev_name).eval()
    with torch.no_grad():
        for _ in range(sets):
            evaluate.note_reference_output(s, s.ref(*s.make_inputs(rng.getrandbits(63))))
    if not evaluate.input_insensitive(s):
        return "input-sensitive"
    if s.ref.state_dict():
        evaluate.redraw_weights(s, rng.getrandbits(63))
        with torch.no_grad():
            out = s.ref(*s.make_inputs(rng.getrandbits(63)))
        if not evaluate.passes_for(s, s.first_ref_sample, evaluate.output_sample(out)):
            return "hardened"
    move = evaluate.first_telling_move(s, s.make_inputs(rng.getrandbits(63)))
    if move is not None:
        return "hardened by input %d %s" % move[:2]
    return "constant" if evaluate.constant_output(s) else "not hardened"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", required=True, help="a directory of task .py files")
    ap.add_argument("--sets", type=int, default=5, help="input sets (the bench's default: 5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", default="cuda-agent", help="tolerance profile")
    ap.add_argument("--json", help="write the verdicts here")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    verdicts = {}
    for name in sorted(os.listdir(a.tasks)):
        if not name.endswith(".py"):
            continue
        t0 = time.time()
        try:
            verdict = judge(os.path.join(a.tasks, name), a.sets, a.seed, a.profile)
        except Exception as e:  # noqa: BLE001 (one task's failure is reported, the rest go on)
            verdict = "error: %s: %s" % (type(e).__name__, str(e)[:200])
        verdicts[name] = verdict
        print("%-32s %-16s %.1f s" % (name, verdict, time.time() - t0), flush=True)
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(verdicts, f, indent=1, sort_keys=True)
    return 1 if any(v.startswith("error") for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
