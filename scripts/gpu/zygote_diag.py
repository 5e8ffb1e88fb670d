#!/usr/bin/env python3
"""Why a harness zygote does or does not become ready on this node: starts zygote.py for each
harness script as the bench worker does (fd 3 a SOCK_SEQPACKET control socket, `python3 -I -B`),
prints its ready message, then in this process repeats the preload and names every thread that
exists afterwards (/proc/self/task/*/comm), and any writable shared mapping.

    scripts/gpu/zygote_diag.py [HARNESS_DIR]     (default: gpu_bench/harness beside this script)
"""

import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def ready_message(harness_dir, script, timeout_s=120):
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = child.fileno()

    def on_fd3():
        os.dup2(fd, 3)

    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-B", os.path.join(harness_dir, "zygote.py"), "--harness",
         os.path.join(harness_dir, script)],
        pass_fds=(fd, 3), preexec_fn=on_fd3, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    child.close()
    parent.settimeout(timeout_s)
    try:
        msg = parent.recv(1 << 20).decode(errors="replace")
    except OSError as e:
        msg = "no message: %s" % e
    wall = time.monotonic() - t0
    proc.kill()
    out = proc.communicate()[0].decode(errors="replace")
    return wall, msg, out[-3000:]


def threads_after_preload(harness_dir, script):
    code = r"""
import importlib.util, json, os, sys
sys.path.insert(0, %r)
spec = importlib.util.spec_from_file_location("h", %r)
m = importlib.util.module_from_spec(spec); sys.modules["harness"] = m; spec.loader.exec_module(m)
facts = m.preload()
names = []
for t in sorted(os.listdir("/proc/self/task")):
    with open("/proc/self/task/%%s/comm" %% t) as f:
        names.append(f.read().strip())
shared = [l.split()[-1] for l in open("/proc/self/maps") if l.split()[1][3:4] == "s" and l.split()[1].startswith("rw")]
import threading
print(json.dumps({"preload": facts, "native_threads": names,
                  "python_threads": [t.name for t in threading.enumerate()], "shared_rw": shared[:10]}))
""" % (harness_dir, os.path.join(harness_dir, script))
    r = subprocess.run([sys.executable, "-I", "-B", "-c", code], capture_output=True, text=True,
                       timeout=180)
    return (r.stdout + r.stderr)[-3000:]


def threads_after_import(env_extra):
    code = "import os, torch; print(len(os.listdir('/proc/self/task')))"
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    return (r.stdout + r.stderr).strip()[-500:]


def main():
    print("threads after `import torch`: %s; with OMP_NUM_THREADS=1: %s" % (
        threads_after_import({}), threads_after_import({"OMP_NUM_THREADS": "1"})))
    harness_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "..", "gpu_bench", "harness")
    for script in ("harness.py", "filter_task.py"):
        wall, msg, out = ready_message(harness_dir, script)
        print("== %s: ready message after %.1f s\n%s" % (script, wall, msg))
        if out.strip():
            print("-- its output:\n" + out)
        print("-- threads after preload, in a plain process:\n" +
              threads_after_preload(harness_dir, script))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
