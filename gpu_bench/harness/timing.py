"""Benchmark mode: candidate, eager Model and torch.compile(Model) timed in interleaved rounds
(DESIGN.md section 5; the method is written up in docs/formats/harness.md).

One trial is one bracket of trial_timer.py: persisting L2 off, device-wide synchronise, then
[host clock t0, event pre, L2 flush (write 4x its size), event start, forward, event end,
device-wide synchronise, host clock t1]. The forward's launches queue behind the flush, so the
event time is its GPU time and the host's time to its first launch is not counted, whichever
contender it is. The trial's time is max(event time, wall - cover - idle overhead): the cover is
the flush's own GPU time (pre..start) in that trial, the idle overhead the median of wall - cover
in brackets around no forward (30 before the trials and one per round). The wall clock, closed by
a device-wide synchronise, also counts work the events cannot see (side streams, other threads'
launches) and host-bound contenders. The raw numbers [event, wall, cover] are kept per trial.

Each contender cycles through `input_sets` pre-made input sets; between rounds every set's
contents are regenerated in place (same addresses, new values), outside any timed region. A random
`checked_trial_fraction` of the candidate's timed trials have their outputs compared with the
reference's on the same inputs, and after each round one untimed call runs under the op guard and
is checked too: a cache keyed on pointers, or a solution correct only for its first calls, fails.
"""

import math
import statistics
import time

import torch

import compare
import evaluate
import trial_timer


def _median(xs):
    return statistics.median(xs) if xs else 0.0


def _spread(xs):
    if len(xs) < 2:
        return {"median": _median(xs), "min": min(xs) if xs else 0.0,
                "max": max(xs) if xs else 0.0, "iqr": 0.0, "cv": 0.0}
    q = statistics.quantiles(xs, n=4)
    mean = statistics.fmean(xs)
    return {"median": _median(xs), "min": min(xs), "max": max(xs), "iqr": q[2] - q[0],
            "cv": statistics.pstdev(xs) / mean if mean > 0 else 0.0}


class TorchEvent:
    """A timing event on the current stream (trial_timer's event interface)."""

    def __init__(self):
        self._event = torch.cuda.Event(enable_timing=True)

    def record(self):
        self._event.record()

    def elapsed_us(self, later):
        return self._event.elapsed_time(later._event) * 1000.0


class TorchGpu(trial_timer.GpuInterface):
    """trial_timer's GPU: the harness's device, torch's events and synchronise."""

    def __init__(self, dev):
        self.dev = dev

    def prepare(self):
        self.dev.disable_persisting_l2()

    def sync(self):
        torch.cuda.synchronize()

    def cover(self):
        self.dev.flush_l2()

    def event(self):
        return TorchEvent()

    def clock(self):
        return time.perf_counter()


IDLE_CALIBRATION_BRACKETS = 30


def benchmark(s, dev, rng):
    opts = s.options
    res = s.result
    t_base = time.perf_counter()
    probe = s.make_inputs(rng.getrandbits(63))
    per_set = max(1, evaluate.input_bytes(probe))
    free, _ = torch.cuda.mem_get_info(s.index)
    # Memory the caching allocator holds but does not use (the poisoning keeps most of the GPU
    # there) is free for the input sets too.
    free += torch.cuda.memory_reserved(s.index) - torch.cuda.memory_allocated(s.index)
    fit = int(free * float(opts["input_memory_fraction"]) // per_set)
    n_sets = max(1, min(int(opts["input_sets"]), fit))
    if n_sets < int(opts["input_sets"]):
        res["notes"].append("input sets limited to %d by GPU memory (%d bytes each)"
                            % (n_sets, per_set))
    sets = [probe] + [s.make_inputs(rng.getrandbits(63)) for _ in range(n_sets - 1)]

    def cand(x):
        with torch.no_grad():
            return s.new(*x)

    def eager(x):
        with torch.no_grad():
            return s.ref(*x)

    contenders = [("candidate", cand)]
    if opts["measure_eager"]:
        contenders.append(("eager", eager))
    compiled_error = ""
    if opts["measure_compile"]:
        try:
            compiled = torch.compile(s.ref)

            def comp(x):
                with torch.no_grad():
                    return compiled(*x)

            t_c = time.perf_counter()
            comp(sets[0])
            torch.cuda.synchronize()
            res["breakdown_s"]["compile_baseline_build"] = time.perf_counter() - t_c
            contenders.append(("compile", comp))
        except Exception as e:  # noqa: BLE001 (no compile baseline is a note, not a failure)
            compiled_error = "%s: %s" % (type(e).__name__, str(e)[:500])
            res["notes"].append("torch.compile baseline unavailable: " + compiled_error)

    timer = trial_timer.Timer(TorchGpu(dev))
    for name, fn in contenders:  # warm-up, untimed
        for w in range(int(opts["warmup_trials"])):
            try:
                fn(sets[w % n_sets])
            except BaseException as e:  # noqa: BLE001
                if name == "candidate":
                    return s.check("timing.run", False, "warm-up call %d: %s: %s"
                                   % (w, type(e).__name__, e))
                raise
        torch.cuda.synchronize()
    timer.sample_idle(IDLE_CALIBRATION_BRACKETS)
    res["breakdown_s"]["baselines"] = time.perf_counter() - t_base

    t_trials = time.perf_counter()
    timed = int(opts["timed_trials"])
    n_checked = min(timed, int(math.ceil(timed * float(opts["checked_trial_fraction"]))))
    checked = set(rng.sample(range(timed), n_checked))
    raw = {name: [] for name, _ in contenders}  # [event, wall, cover] us per trial
    trial = 0
    rounds = 0
    ok = True
    while ok and trial < timed:
        order = contenders[rounds % len(contenders):] + contenders[:rounds % len(contenders)]
        for j in range(n_sets):
            if trial >= timed:
                break
            for name, fn in order:
                try:
                    t = timer.bracket(fn, sets[j])
                except BaseException as e:  # noqa: BLE001
                    if name != "candidate":
                        raise
                    if evaluate.device_fault(dev):
                        res["device_fault"] = True
                    ok = s.check("timing.run", False, "timed trial %d: %s: %s"
                                 % (trial, type(e).__name__, e))
                    break
                raw[name].append(t.raw())
                out, t.out = t.out, None
                if name == "candidate" and trial in checked:
                    ok = check_against_reference(s, out, sets[j], "[trial=%d]" % trial, "timed")
                if name != "candidate":  # no correct result left behind for the candidate
                    dev.scrub(compare.flatten_outputs(out))
                del out, t
                if not ok:
                    break
            if not ok:
                break
            trial += 1
        rounds += 1
        if ok:
            ok = audit_call(s, sets[rng.randrange(n_sets)], "[round=%d]" % rounds)
        if ok and trial < timed:  # new contents, same addresses, outside any timed region
            for st in sets:
                fresh = s.make_inputs(rng.getrandbits(63))
                for a, b in zip(st, fresh):
                    if isinstance(a, torch.Tensor):
                        a.copy_(b)
                del fresh
            torch.cuda.synchronize()
        if ok:  # the idle overhead follows the host through the run (one bracket per round)
            timer.sample_idle()
    res["breakdown_s"]["trials"] = time.perf_counter() - t_trials
    if not ok:
        return False
    s.check("timed_outputs", True, "%d randomly chosen timed trials matched the reference"
            % n_checked)
    limit = dev.persisting_l2_limit()
    if limit not in (0, -1):
        s.violation("l2_persistence", "the candidate set the persisting L2 limit to %d bytes"
                    % limit)
        return s.check("l2_persistence", False, "persisting L2 was enabled during timing")
    t_re = time.perf_counter()
    seed = rng.getrandbits(63)
    ok = evaluate.verify_one(s, dev, seed, "[recheck,seed=%d]" % seed, False, False,
                             phase_key="recheck")
    res["breakdown_s"]["recheck"] = time.perf_counter() - t_re
    times = {name: [timer.trial_us(*r) for r in v] for name, v in raw.items()}
    wall_decided = {name: sum(timer.wall_decided(*r) for r in v) for name, v in raw.items()}
    summary = {name: _spread(v) for name, v in times.items()}
    speedups = {}
    c_med = summary["candidate"]["median"]
    for name in ("eager", "compile"):
        if name in summary and c_med > 0:
            speedups[name] = summary[name]["median"] / c_med
    res["timing"] = {
        "method": "max(cuda event, wall - cover - idle bracket) per trial; the forward queued "
                  "behind the L2 flush (its host time to the first launch not counted); "
                  "device-wide sync",
        "idle_overhead_us": timer.idle_us,
        "idle_brackets": len(timer.idle_samples),
        "wall_decided_trials": wall_decided,
        "input_sets": n_sets,
        "rounds": rounds,
        "candidate_us": times["candidate"],
        "eager_us": times.get("eager", []),
        "compile_us": times.get("compile", []),
        "raw_event_wall_us": raw,
        "summary": summary,
        "speedup": speedups,
        "checked_trials": sorted(checked),
        "compile_error": compiled_error,
    }
    if speedups.get("eager", 0) > float(opts["implausible_speedup"]):
        s.violation("implausible_speedup", "%.1fx faster than eager is past the configured %.1fx:"
                    " flagged for audit" % (speedups["eager"], float(opts["implausible_speedup"])))
    return ok


def check_against_reference(s, out, inputs, tag, kind):
    """Compares one output with the reference on the same inputs (untimed)."""
    with torch.no_grad():
        ref = s.ref(*evaluate.clone_inputs(inputs))
    checks, violations = compare.check_outputs(out, ref, s.options["tolerance_profile"], s.index,
                                               tag)
    s.dev.scrub(compare.flatten_outputs(ref))
    s.result["violations"].extend(violations)
    bad = [c for c in checks if not c["passed"]]
    if bad:
        s.result["checks"].extend(bad)
        s.violation("stale_output", "%s output differs from the reference on the same inputs"
                    % tag)
        return s.check(kind + "_outputs", False, "%s%s: %s" % (bad[0]["name"], "",
                                                              bad[0]["message"]))
    return True


def audit_call(s, inputs, tag):
    """One untimed candidate call under the op guard, checked against the reference."""
    out, err, g = evaluate.run_candidate_guarded(s, evaluate.clone_inputs(inputs))
    if g.violations:
        s.result["violations"].extend(g.violations)
        return s.check("audit_call" + tag, False, g.violations[0]["detail"])
    if err:
        return s.check("audit_call" + tag, False, err)
    return check_against_reference(s, out, inputs, tag, "audit_call")
