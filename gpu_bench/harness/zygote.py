"""The harness zygote: one long-lived, pre-started harness process per bench worker, so that a
request does not pay for a fresh Python importing torch (gpu_bench/harness_zygote.h is the C++
side; docs/formats/harness.md, "The zygote", is the protocol).

    python3 -I -B zygote.py --harness HARNESS.py      (fd 3: the control socket)

Started by the bench worker in the same sandbox as a per-request harness child (uid, network
namespace, limits). It imports the harness module and calls its `preload()` (torch and the
harness's modules, first-use paths warmed on the CPU) but never initialises CUDA and never runs
untrusted code. Then, per job message on fd 3 (a SOCK_SEQPACKET socket; the job's output pipe
travels with it as SCM_RIGHTS), it forks a child that becomes exactly the per-request harness:
its own process group, stdout and stderr on the job's pipe, stdin /dev/null, every other fd
closed, the job's environment (as a fresh Python would see it) and working directory, its CPU
limit, then `harness.main(argv, t0)`. The zygote sends the child's pid (and a pidfd of it), waits for it, and
sends how it ended. One job at a time.

The zygote is not dumpable (PR_SET_DUMPABLE 0), so a job running as the same uid can neither
ptrace it nor read or write its memory through /proc; a job can still signal it, which costs a
restart (the worker notices: no status, a closed socket) and never a verdict, because the worker
re-runs that job in a fresh child. Each job starts from the same pristine copy of this process.
"""

import ctypes
import importlib.util
import json
import os
import resource
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback

CONTROL_FD = 3
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MAX_MESSAGE = 1 << 20
# The zygote's environment as its Python start-up left it (see _job_environment).
_STARTUP_ENV = dict(os.environ)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _send(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def _native_threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _shared_writable_mappings():
    """Writable shared mappings would be shared with every job after fork (a job could then
    change what the next one sees): there must be none."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[1].startswith("rw") and parts[1][3] == "s":
                    found.append(parts[-1] if len(parts) >= 6 else parts[0])
    except OSError:
        pass
    return found


def _load_harness(path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # -I drops the script's dir
    spec = importlib.util.spec_from_file_location("harness", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["harness"] = module
    spec.loader.exec_module(module)
    return module


def _cuda_initialized():
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001
        return False


def _job_environment(items):
    """The job's environment ("NAME=value" items) as a fresh Python started with it would see it:
    Python's start-up sets LC_CTYPE where the locale is C (PEP 538 locale coercion), so where the
    zygote's own start-up did that with the same locale variables, the job gets it too."""
    env = {}
    for item in items:
        name, _, value = item.partition("=")
        env[name] = value
    coerced = _STARTUP_ENV.get("LC_CTYPE")
    if (coerced and "LC_CTYPE" not in env
            and all(env.get(k) == _STARTUP_ENV.get(k) for k in ("LC_ALL", "LANG"))):
        env["LC_CTYPE"] = coerced
    return env


def _run_job(harness, job, out_fd, sock, zygote_pid, t0):
    """In the forked child: become the per-request harness for `job`, then exit. Never returns."""
    code = 70
    try:
        sock.close()
        os.setpgid(0, 0)
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != zygote_pid:  # the zygote died between fork and prctl
            os._exit(125)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(job["dir"])
        os.environ.clear()
        os.environ.update(_job_environment(job["env"]))
        tempfile.tempdir = None  # TMPDIR is the job's now
        cpu = int(job.get("cpu_seconds", 0))
        if cpu > 0:
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            want = cpu + 1 if hard == resource.RLIM_INFINITY else min(cpu + 1, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, want), want))
        sys.argv = [harness.__file__] + list(job["argv"])
        code = harness.main(list(job["argv"]), t0)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 (a harness that raises is a crash to the worker)
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
        code = 70
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code if isinstance(code, int) else 1)


def serve(sock, harness, ready):
    zygote_pid = os.getpid()
    _send(sock, ready)
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        if not msg:
            return 0  # the worker closed the socket: done
        t0 = time.perf_counter()
        job = json.loads(msg)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            _send(sock, {"error": "a job message carries exactly one fd (the output pipe)"})
            return 2
        out_fd = fds[0]
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_job(harness, job, out_fd, sock, zygote_pid, t0)
        os.close(out_fd)
        try:
            os.setpgid(pid, pid)  # also here, so the group exists before the worker signals it
        except OSError:
            pass  # the child already made it (or already exited)
        pidfds = []
        try:
            pidfds.append(os.pidfd_open(pid))
        except (AttributeError, OSError):
            pass  # an old kernel or Python: the worker waits for the status message alone
        _send(sock, {"job": job["id"], "pid": pid}, pidfds)
        for fd in pidfds:
            os.close(fd)
        _, status, usage = os.wait4(pid, 0)
        _send(sock, {
            "job": job["id"],
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "max_rss_bytes": usage.ru_maxrss * 1024,
            "wall_s": time.perf_counter() - t0,
        })


def main(argv):
    t0 = time.perf_counter()
    if len(argv) != 2 or argv[0] != "--harness":
        sys.stderr.write("usage: zygote.py --harness HARNESS.py (control socket on fd 3)\n")
        return 2
    # No ptrace and no /proc/<pid>/mem for the jobs of the same uid; inherited by the jobs too.
    _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a stray signal ends the zygote, nothing else
    sock = socket.socket(fileno=CONTROL_FD)
    ready = {"ready": False, "pid": os.getpid(), "python": sys.version.split()[0]}
    # OpenMP's pool (torch's intra-op threads: nproc - 1 of them, started while torch loads on a
    # many-core node) must not exist before fork; one thread, read when libgomp loads, starts
    # none. Jobs keep it: their CPU work is small, the filter's children set 1 thread anyway.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    try:
        harness = _load_harness(argv[1])
        preload = getattr(harness, "preload", None)
        ready["preload"] = preload() if preload else {}
        ready["cuda_initialized"] = _cuda_initialized()
        ready["python_threads"] = threading.active_count()
        ready["native_threads"] = _native_threads()
        ready["shared_writable_mappings"] = _shared_writable_mappings()
        ready["startup_s"] = time.perf_counter() - t0
        if ready["cuda_initialized"]:
            ready["error"] = "CUDA was initialised before fork: jobs could not use it"
        elif ready["python_threads"] != 1 or ready["native_threads"] > 1:
            ready["error"] = ("%d Python / %d native threads before fork: forking is unsafe"
                              % (ready["python_threads"], ready["native_threads"]))
        elif ready["shared_writable_mappings"]:
            ready["error"] = ("writable shared mappings would be shared with every job: %s"
                              % ready["shared_writable_mappings"][:5])
        else:
            ready["ready"] = True
    except BaseException as e:  # noqa: BLE001 (reported to the worker, which falls back)
        ready["error"] = "%s: %s" % (type(e).__name__, e)
    if not ready["ready"]:
        _send(sock, ready)
        return 1
    return serve(sock, harness, ready)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
