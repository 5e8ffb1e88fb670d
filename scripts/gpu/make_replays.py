#!/usr/bin/env python3
r"""Replay transcripts for `cuda-agent eval --policy replay:DIR` from the honest bench suite
(tests/bench_suite/honest): for each entry, its task as TASKS/<entry>.py (KernelBench format,
for `cuda-agent tasks import`) and REPLAYS/<entry>.jsonl, an agent that writes the entry's
kernels and model_new.py, compiles, verifies, benchmarks and finishes. The first entry's agent
first writes a kernel with a compile error, compiles, reads the error and fixes it (the path an
episode takes when the model gets something wrong).

  scripts/gpu/make_replays.py OUTDIR            # OUTDIR/tasks/*.py, OUTDIR/replays/*.jsonl
  cuda-agent tasks import OUTDIR/tasks --store S --suite honest
  cuda-agent eval --tasks honest --store S --policy replay:OUTDIR/replays --report-dir R
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "..", "tests", "bench_suite", "honest")


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def turn(content, *calls):
    return json.dumps({"role": "assistant", "content": content, "tool_calls": list(calls)})


def transcript(entry_dir, with_error):
    files = []
    for root, _, names in os.walk(os.path.join(entry_dir, "kernels")):
        for n in sorted(names):
            p = os.path.join(root, n)
            with open(p) as f:
                files.append((os.path.relpath(p, entry_dir), f.read()))
    with open(os.path.join(entry_dir, "model_new.py")) as f:
        model_new = f.read()
    lines = [turn("I will read the task first.", call("read_file", path="model.py"))]
    if with_error:
        path, text = files[0]
        broken = text.replace(";", "", 1)  # a missing semicolon: nvcc names file and line
        lines.append(turn("A first version of the kernel.", call("write_file", path=path,
                                                                 content=broken)))
        lines.append(turn("Compile it.", call("compile")))
        lines.append(turn("The compiler found a syntax error; fixing it.",
                          call("write_file", path=path, content=text)))
        files = files[1:]
    lines.append(turn("Writing the kernels and the module that calls them.",
                      *[call("write_file", path=p, content=t) for p, t in files],
                      call("write_file", path="model_new.py", content=model_new)))
    lines.append(turn("Compile.", call("compile")))
    lines.append(turn("Check correctness.", call("verify")))
    lines.append(turn("Time it against eager and torch.compile.", call("benchmark")))
    lines.append(turn("Done.", call("finish")))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "tasks"), exist_ok=True)
    os.makedirs(os.path.join(out, "replays"), exist_ok=True)
    for i, name in enumerate(sorted(os.listdir(SUITE))):
        d = os.path.join(SUITE, name)
        if not os.path.isfile(os.path.join(d, "model.py")):
            continue
        with open(os.path.join(d, "model.py")) as f, \
                open(os.path.join(out, "tasks", name + ".py"), "w") as g:
            g.write(f.read())
        with open(os.path.join(out, "replays", name + ".jsonl"), "w") as g:
            g.write(transcript(d, with_error=(i == 0)))
    print("wrote %s/tasks and %s/replays" % (out, out))


if __name__ == "__main__":
    main()
