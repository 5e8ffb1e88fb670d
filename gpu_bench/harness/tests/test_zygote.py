"""zygote.py's start-up, with a stand-in harness (standard library only: no torch, no GPU).

The ready message is what the worker decides on: a zygote with more than one thread before fork
refuses to serve. On a 16-core node torch 2.11 left OpenMP's 15 workers behind (every zygote
refused, silently falling back to fresh children), so the OpenMP and MKL pools must be limited to
one thread before the harness, and with it torch, is loaded."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zygote.py")

FAKE_HARNESS = '''
import os
import threading

def preload():
    # What a thread-pool library reads when it loads.
    return {"omp": os.environ.get("OMP_NUM_THREADS"), "mkl": os.environ.get("MKL_NUM_THREADS")}

def main(argv, t0=None):
    return 0
'''

FAKE_HARNESS_WITH_THREAD = FAKE_HARNESS + '''
import time
_t = threading.Thread(target=time.sleep, args=(30,), daemon=True)
_t.start()
'''


def ready_message(harness_source, env):
    with tempfile.TemporaryDirectory() as d:
        harness = os.path.join(d, "harness.py")
        with open(harness, "w") as f:
            f.write(harness_source)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fd = child.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-B", ZYGOTE, "--harness", harness],
            pass_fds=(fd, 3), preexec_fn=lambda: os.dup2(fd, 3), env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        child.close()
        parent.settimeout(60)
        try:
            return json.loads(parent.recv(1 << 20).decode())
        finally:
            parent.close()  # the zygote ends when its control socket closes
            proc.kill()
            proc.communicate(timeout=60)


class ZygoteStartTest(unittest.TestCase):
    def test_thread_pools_are_limited_before_the_harness_loads(self):
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",
                                                              "MKL_NUM_THREADS")}
        env["OMP_NUM_THREADS"] = "16"  # whatever the node says, the zygote needs one thread
        ready = ready_message(FAKE_HARNESS, env)
        self.assertTrue(ready["ready"], ready)
        self.assertEqual(ready["preload"], {"omp": "1", "mkl": "1"})
        self.assertEqual(ready["native_threads"], 1)

    def test_a_thread_before_fork_is_refused_with_the_reason(self):
        ready = ready_message(FAKE_HARNESS_WITH_THREAD, dict(os.environ))
        self.assertFalse(ready["ready"])
        self.assertIn("threads before fork", ready["error"])


if __name__ == "__main__":
    unittest.main()
