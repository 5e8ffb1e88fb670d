"""One evaluation: load the task and the solution, run the correctness checks, then time or
profile (DESIGN.md section 5). Called by harness.py with torch not yet imported."""

import builtins
import math
import os
import random
import sys
import time
import types

import torch

import compare
import device as device_mod
import guard
import launchers
import policy
from errors import HarnessError

# Builtins model_new.py does not get at run time (the AST check refuses them too).
_REMOVED_BUILTINS = policy.FORBIDDEN_BUILTINS - {"type", "object", "id", "memoryview"}


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    # torch's own lazy imports reach this hook too: C++ code calling PyImport_Import (for example
    # the dispatcher importing torch._library.simple_registry under a dispatch mode) finds
    # __import__ in the builtins of the running Python frame, which is the candidate's forward.
    # So torch's submodules pass; model_new.py's own import statements were already limited to
    # policy.ALLOWED_MODULES by the AST check, and it cannot name __import__ itself.
    if level == 0 and (name in policy.ALLOWED_MODULES or name.startswith("torch.")):
        return builtins.__import__(name, globals, locals, fromlist, level)
    raise ImportError("model_new.py may not import '%s'" % name)


def _restricted_builtins():
    b = {k: v for k, v in vars(builtins).items() if k not in _REMOVED_BUILTINS}
    b["__import__"] = _guarded_import
    return b


def _new_precision_api():
    """PyTorch 2.9+ has fp32_precision settings and warns (or refuses) when the legacy
    allow_tf32 switches are mixed with them; use one API only."""
    try:  # older torch raises AssertionError, not AttributeError, for unknown attributes
        torch.backends.cuda.matmul.fp32_precision
        return True
    except Exception:  # noqa: BLE001
        return False


_FLAG_READERS = [
    ("torch.backends.cuda.matmul.fp32_precision",
     lambda: torch.backends.cuda.matmul.fp32_precision),
    ("torch.backends.cudnn.conv.fp32_precision", lambda: torch.backends.cudnn.conv.fp32_precision),
    ("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
    ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
     lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    ("torch.backends.cudnn.benchmark", lambda: torch.backends.cudnn.benchmark),
    ("torch.backends.cudnn.deterministic", lambda: torch.backends.cudnn.deterministic),
]


def precision_flags(allow_tf32):
    """Sets TF32 for matmul and cuDNN (the same for every contender) and returns the flags."""
    if _new_precision_api():
        mode = "tf32" if allow_tf32 else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
        try:
            torch.backends.cudnn.rnn.fp32_precision = mode
        except Exception:  # noqa: BLE001 (no RNN setting in this torch)
            pass
    else:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.backends.cudnn.benchmark = False
    return read_precision_flags()


def read_precision_flags():
    new_api = _new_precision_api()
    flags = []
    for name, read in _FLAG_READERS:
        if new_api and name.endswith("allow_tf32"):
            continue
        if not new_api and name.endswith("fp32_precision"):
            continue
        try:
            flags.append("%s=%s" % (name, read()))
        except Exception as e:  # noqa: BLE001 (a flag this torch lacks)
            flags.append("%s=unavailable(%s)" % (name, type(e).__name__))
    return flags


def _read(path, what):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise HarnessError("not_found", "harness.request", "cannot read %s '%s': %s"
                           % (what, path, e))


class Session:
    """Everything one evaluation holds: the device, both models, the input generator."""

    def __init__(self, request, options, result):
        self.request = request
        self.options = options
        self.result = result
        self.index = int(request.get("device", 0))
        self.dev_name = "cuda:%d" % self.index
        self.task = None
        self.ref = None
        self.new = None
        self.init_inputs = None
        self.dev = None
        self.poisoned_bytes = []  # per candidate run on poisoned memory (one note sums them)
        self.poison_note_at = None
        self.first_ref_sample = None  # output_sample of the reference's first output
        self.ref_outputs_seen = 0  # reference outputs compared with it
        self.ref_varies = False  # one of them was told apart from it by the checks
        self.ref_max_change = 0.0  # largest relative change of a later one (relative_change)

    # --- checks and violations --------------------------------------------------------------
    def check(self, name, passed, message="", **extra):
        c = {"name": name, "passed": bool(passed), "max_abs_error": 0.0, "max_rel_error": 0.0,
             "first_mismatch_index": -1, "message": message}
        c.update(extra)
        self.result["checks"].append(c)
        return passed

    def violation(self, rule, detail):
        self.result["violations"].append({"rule": rule, "detail": detail})

    # --- loading ------------------------------------------------------------------------------
    def load_task(self):
        src = _read(self.request["task_model_py"], "task model.py")
        module = types.ModuleType("task_model")
        module.__file__ = "model.py"
        try:
            exec(compile(src, "model.py", "exec"), module.__dict__)
        except Exception as e:  # noqa: BLE001 (a broken task is a task error)
            raise HarnessError("invalid_input", "harness.task", "model.py: %s: %s"
                               % (type(e).__name__, e))
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(module, name):
                raise HarnessError("invalid_input", "harness.task", "model.py has no '%s'" % name)
        self.task = module

    def static_policy(self, source):
        findings = policy.check_source(source)
        for f in findings:
            self.result["violations"].append(f.to_dict())
        return self.check("policy.ast", not findings, "; ".join(
            "line %d: %s (%s)" % (f.line, f.detail, f.rule) for f in findings[:20]))

    def load_solution(self, source, cudart):
        try:
            kernels = launchers.build_module(self.request["library"],
                                             self.request.get("prototypes", []), self.index,
                                             cudart)
        except (OSError, AttributeError, launchers.LaunchError) as e:
            return self.check("load.library", False, "%s: %s" % (type(e).__name__, e))
        self.check("load.library", True)
        sys.modules["kernels"] = kernels
        module = types.ModuleType("model_new")
        module.__dict__["__builtins__"] = _restricted_builtins()
        module.__dict__["__name__"] = "model_new"
        try:
            exec(compile(source, "model_new.py", "exec"), module.__dict__)
            if not isinstance(module.__dict__.get("ModelNew"), type):
                raise TypeError("model_new.py defines no class ModelNew")
        except BaseException as e:  # noqa: BLE001 (the candidate's failure is a failed check)
            return self.check("load.model_new", False, "%s: %s" % (type(e).__name__, e))
        self.check("load.model_new", True)
        self.new_module = module
        return True

    def build_models(self, seed):
        torch.manual_seed(seed)
        try:
            with torch.device(self.dev_name):
                self.init_inputs = self.task.get_init_inputs()
                self.ref = self.task.Model(*self.init_inputs).to(self.dev_name).eval()
        except torch.cuda.OutOfMemoryError as e:
            raise HarnessError("invalid_input", "harness.task_too_large", "Model: %s" % e)
        except Exception as e:  # noqa: BLE001
            raise HarnessError("invalid_input", "harness.task", "Model(*get_init_inputs()): %s: %s"
                               % (type(e).__name__, e))
        try:
            with torch.device(self.dev_name):
                self.new = self.new_module.ModelNew(*self.init_inputs).to(self.dev_name).eval()
            self.new.load_state_dict(self.ref.state_dict(), strict=True)
        except BaseException as e:  # noqa: BLE001
            return self.check("state_dict", False,
                              "ModelNew(*get_init_inputs()) and load_state_dict(Model's): %s: %s"
                              % (type(e).__name__, e))
        return self.check("state_dict", True)

    def make_inputs(self, seed):
        torch.manual_seed(seed)
        try:
            with torch.device(self.dev_name):
                inputs = list(self.task.get_inputs())
            return [x.to(self.dev_name) if isinstance(x, torch.Tensor) else x for x in inputs]
        except torch.cuda.OutOfMemoryError as e:
            raise HarnessError("invalid_input", "harness.task_inputs_too_large",
                               "get_inputs() does not fit on the GPU: %s" % e)
        except Exception as e:  # noqa: BLE001
            raise HarnessError("invalid_input", "harness.task", "get_inputs(): %s: %s"
                               % (type(e).__name__, e))


class Phases:
    """Seconds per phase of the correctness checks, summed over input sets, into the result's
    breakdown_s as "checks.<phase>" ("recheck.<phase>" after timing; docs/formats/harness.md).
    Each phase ends with a device-wide synchronise, so GPU work queued in one phase is not billed
    to the next; a synchronise that fails (the candidate broke the context) is left to the checks
    that follow, which report it as they always did."""

    def __init__(self, result, key="checks"):
        self.breakdown = result["breakdown_s"]
        self.key = key
        self.t = time.perf_counter()

    def mark(self, name):
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 (a broken context: the checks after this report it)
            pass
        now = time.perf_counter()
        key = self.key + "." + name
        self.breakdown[key] = self.breakdown.get(key, 0.0) + (now - self.t)
        self.t = now


def clone_inputs(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def input_bytes(inputs):
    return sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))


SAMPLE_ELEMENTS = 1 << 20  # per output, for telling whether the reference's output varies


def output_sample(out):
    """A forward's outputs, each cut to at most SAMPLE_ELEMENTS evenly spaced elements (a copy):
    what is kept of the reference's first output to compare later outputs against."""
    sample = []
    for t in compare.flatten_outputs(out):
        if not isinstance(t, torch.Tensor):
            sample.append(t)
            continue
        x = t.detach().reshape(-1)
        step = max(1, -(-x.numel() // SAMPLE_ELEMENTS))
        sample.append(x[::step].clone())
    return sample


def passes_for(s, stored, other):
    """Whether a stored output (a sample) would pass the checks against another output of the
    same elements: then the checks cannot tell the two apart. When the samples already differ
    beyond the tolerance, the whole outputs do too."""
    if len(stored) != len(other):
        return False
    if any(not isinstance(a, torch.Tensor) for a in stored + other):
        return all(not isinstance(a, torch.Tensor) and a == b for a, b in zip(stored, other))
    checks, _ = compare.check_outputs(stored, other, s.options["tolerance_profile"], s.index,
                                      "[sample]")
    return all(c["passed"] for c in checks)


def device_fault(dev):
    """Whether the CUDA context is broken (a sticky error such as an illegal address)."""
    try:
        torch.cuda.synchronize()
        return False
    except Exception:  # noqa: BLE001
        return True


def run_candidate_guarded(s, inputs):
    """(outputs or None, error message or "", guard)."""
    g = guard.OpGuard()
    try:
        with torch.no_grad(), g:
            out = s.new(*inputs)
        torch.cuda.synchronize()
        return out, "", g
    except guard.GuardStop as e:
        return None, str(e), g
    except BaseException as e:  # noqa: BLE001
        return None, "%s: %s" % (type(e).__name__, e), g


def _storage_span(t):
    """(start, end) device addresses of a tensor's whole storage."""
    st = compare.untyped_storage(t)
    return st.data_ptr(), st.data_ptr() + st.nbytes()


def aliased_outputs(outputs, inputs):
    """Indices of outputs whose storage overlaps an input's: an output must be memory of its own
    (a view of an input can look right without any work, e.g. ReLU of non-negative inputs)."""
    spans = [_storage_span(x) for x in inputs if isinstance(x, torch.Tensor) and x.numel()]
    bad = []
    for i, o in enumerate(compare.flatten_outputs(outputs)):
        if isinstance(o, torch.Tensor) and o.numel():
            a, b = _storage_span(o)
            if any(a < e and s_ < b for s_, e in spans):
                bad.append(i)
    return bad


def note_poisoning(s, nbytes):
    """One note for all the candidate runs on poisoned memory: how many, and the least and most
    bytes poisoned (one line per run buried the report's other notes)."""
    s.poisoned_bytes.append(nbytes)
    text = ("poisoned free GPU memory before each of %d candidate run(s): %d to %d bytes"
            % (len(s.poisoned_bytes), min(s.poisoned_bytes), max(s.poisoned_bytes)))
    notes = s.result["notes"]
    if s.poison_note_at is None:
        s.poison_note_at = len(notes)
        notes.append(text)
    else:
        notes[s.poison_note_at] = text


def verify_one(s, dev, seed, tag, poison, first, same_address_seed=None, phase_key="checks"):
    """All correctness checks on one fresh input set. Returns False at the first failure.

    The candidate runs first, on poisoned memory, while no reference output for these inputs
    exists anywhere on the GPU (so there is nothing to find and copy, and nothing to reuse
    uninitialised); the reference runs after it, on its own copy of the inputs."""
    ph = Phases(s.result, phase_key)
    orig = s.make_inputs(seed)
    ref_in = clone_inputs(orig)
    cand_in = clone_inputs(orig)
    ph.mark("inputs")
    if poison:
        note_poisoning(s, dev.poison_free_memory(reserve_big_block=first))
        ph.mark("poison_reserve" if first else "poison")
    launches = launchers.launch_count()
    out, err, g = run_candidate_guarded(s, cand_in)
    launched = launchers.launch_count() - launches
    ph.mark("candidate")
    for v in g.violations:
        s.result["violations"].append(v)
    if g.violations:
        return s.check("op_guard" + tag, False, g.violations[0]["detail"])
    if err:
        if device_fault(dev):
            s.result["device_fault"] = True
        return s.check("run" + tag, False, err)
    s.check("run" + tag, True)
    if launched == 0:
        s.violation("no_kernel_launched", "ModelNew.forward called no kernels.* launcher %s" % tag)
        return s.check("kernel_launched" + tag, False,
                       "ModelNew.forward returned without calling any kernels.* launcher")
    aliased = aliased_outputs(out, cand_in)
    if aliased:
        s.violation("output_aliases_input", "output(s) %s share memory with an input %s"
                    % (aliased, tag))
        return s.check("outputs_own_memory" + tag, False,
                       "output(s) %s are views of (or overlap) an input" % aliased)
    with torch.no_grad():
        ref_out = s.ref(*ref_in)
    torch.cuda.synchronize()
    note_reference_output(s, ref_out)
    ph.mark("reference")
    ref_mutates = any(isinstance(a, torch.Tensor) and not compare.same_bits(a, b)
                      for a, b in zip(ref_in, orig))
    checks, violations = compare.check_outputs(out, ref_out, s.options["tolerance_profile"],
                                               s.index, tag)
    ph.mark("compare")
    s.result["checks"].extend(checks)
    s.result["violations"].extend(violations)
    if not all(c["passed"] for c in checks):
        return False
    expect = ref_in if ref_mutates else orig
    changed = [i for i, (a, b) in enumerate(zip(cand_in, expect))
               if isinstance(a, torch.Tensor) and not compare.same_bits(a, b)]
    if changed:
        s.violation("inputs_mutated", "the candidate changed input(s) %s %s" % (changed, tag))
    ok = s.check("inputs_unchanged" + tag, not changed,
                 "candidate changed input(s) %s" % changed if changed else "")
    ph.mark("inputs_unchanged")
    if ok and same_address_seed is not None:
        # The outputs go back to the allocator first, so the candidate's next output can land at
        # the same address too (a memo keyed on input and output pointers then hits).
        fresh = s.make_inputs(same_address_seed)  # allocated while the old outputs live
        for a, b in zip(cand_in, fresh):
            if isinstance(a, torch.Tensor):
                a.copy_(b)
        del out, ref_out
        ok = same_address_recheck(s, dev, cand_in, fresh, same_address_seed, poison)
        ph.mark("same_address")
    return ok


def rerun_against_reference(s, dev, cand_in, ref_in, tag, poison, ref_out=None):
    """The candidate once more (guarded, on poisoned free memory when asked), then the reference
    on `ref_in` (unless its output on them is given as `ref_out`), and their outputs compared.
    Returns (ran, bad, ref_out, out): ran is False when the candidate's run failed (its failed
    `run<tag>` check is recorded), else bad holds the output checks that failed, ref_out the
    reference's output and out the candidate's."""
    if poison:
        dev.poison_free_memory(reserve_big_block=False)
    out, err, g = run_candidate_guarded(s, cand_in)
    s.result["violations"].extend(g.violations)
    if g.violations or err:
        s.check("run" + tag, False, g.violations[0]["detail"] if g.violations else err)
        return False, [], None, None
    if ref_out is None:
        with torch.no_grad():
            ref_out = s.ref(*ref_in)
    checks, violations = compare.check_outputs(out, ref_out, s.options["tolerance_profile"],
                                               s.index, tag)
    s.result["violations"].extend(violations)
    return True, [c for c in checks if not c["passed"]], ref_out, out


def same_address_recheck(s, dev, cand_in, ref_in, seed, poison):
    """New values in the candidate's input buffers (same addresses), and the candidate once
    more: a result cache keyed on pointers (in model_new.py or in the launcher) returns the old
    answer and fails; so does a solution that is right only for its first calls. `ref_in` holds
    the same new values for the reference."""
    tag = "[same_address,seed=%d]" % seed
    ran, bad, _, _ = rerun_against_reference(s, dev, cand_in, ref_in, tag, poison)
    if not ran:
        return False
    if bad:
        s.result["checks"].extend(bad)
        s.violation("stale_output", "new values in the same input buffers gave a wrong result")
        return s.check("same_address" + tag, False, "%s: %s" % (bad[0]["name"], bad[0]["message"]))
    return s.check("same_address" + tag, True)


def note_reference_output(s, ref_out):
    """Keeps a sample of the reference's first output, and notes whether a later one (other
    inputs) would fail the checks against it."""
    s.ref_outputs_seen += 1
    if s.first_ref_sample is None:
        s.first_ref_sample = output_sample(ref_out)
    else:
        later = output_sample(ref_out)
        s.ref_max_change = max(s.ref_max_change, relative_change(s.first_ref_sample, later))
        if not s.ref_varies:
            s.ref_varies = not passes_for(s, s.first_ref_sample, later)


# The task filter's rule for an output that does not change (filter_task.py, change_rtol), looser
# by 10: a mean over 2^30 draws (KernelBench's HingeLoss) moves by about 2e-5 between input sets.
CONSTANT_RTOL = 1e-4


def relative_change(a, b):
    """max |a - b| / max(|a|, |b|) over two samples' tensors (0 for equal ones, inf when their
    shapes, dtypes or non-floating values differ)."""
    worst = 0.0
    for x, y in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            worst = max(worst, 0.0 if x == y else math.inf)
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return math.inf
        if x.numel() == 0:
            continue
        if x.is_complex():
            x, y = torch.view_as_real(x), torch.view_as_real(y)
        if not x.is_floating_point():
            worst = max(worst, 0.0 if bool(torch.equal(x, y)) else math.inf)
            continue
        x, y = x.double(), y.double()
        scale = max(x.abs().max().item(), y.abs().max().item())
        diff = (x - y).abs().max().item()
        if diff != diff:  # NaN somewhere: the same NaNs count as no change
            diff = 0.0 if compare.same_bits(x, y) else math.inf
        worst = max(worst, diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf))
    return worst


def input_insensitive(s):
    """Whether the reference's output on every input set checked (at least two) would pass the
    checks against its output on the first: then a stored answer passes every check that varies
    only the inputs (KernelBench level 3's deep networks at their default initialisation, e.g.
    12_VGG19, give one output for any input, up to the tolerance)."""
    return s.ref_outputs_seen >= 2 and not s.ref_varies


def redraw_weights(s, seed):
    """New weights for the reference, drawn as the task draws them (Model(*get_init_inputs())
    under `seed`) and loaded in place."""
    torch.manual_seed(seed)
    with torch.device(s.dev_name):
        fresh = s.task.Model(*s.init_inputs).to(s.dev_name)
    s.ref.load_state_dict(fresh.state_dict(), strict=True)


def constant_output(s):
    """Whether the reference's output does not change with the inputs at all (by at most
    CONSTANT_RTOL of its size): with nothing else to vary, a constant task."""
    return s.ref_max_change <= CONSTANT_RTOL


def weights_recheck(s, dev, weight_seed, input_seed, poison):
    """The first way to harden a task whose output ignores its inputs: new weights, drawn as the
    task draws them (Model(*get_init_inputs()) under another seed), loaded into both the reference
    and the candidate already checked (load_state_dict, in place), then both run on a fresh input
    set. A stored output, or one cached on an earlier call, no longer matches; an honest solution
    computes from its parameters and does. Returns the check's outcome, or None with the reason
    when it cannot tell (the task has no weights, or new ones leave its output as it was)."""
    tag = "[weights,seed=%d]" % weight_seed
    if not s.ref.state_dict():
        return None, "the task has no weights to re-draw"
    try:
        redraw_weights(s, weight_seed)
    except Exception as e:  # noqa: BLE001 (the task's own failure; the candidate is not at fault)
        s.result["notes"].append("could not re-draw the task's weights (%s: %s)"
                                 % (type(e).__name__, e))
        return None, "its weights could not be re-drawn"
    try:
        s.new.load_state_dict(s.ref.state_dict(), strict=True)
    except BaseException as e:  # noqa: BLE001
        return s.check("state_dict" + tag, False, "load_state_dict of re-drawn weights: %s: %s"
                       % (type(e).__name__, e)), ""
    inputs = s.make_inputs(input_seed)
    ran, bad, ref_out, _ = rerun_against_reference(s, dev, clone_inputs(inputs),
                                                   clone_inputs(inputs), tag, poison)
    if not ran:
        return False, ""
    if bad:
        s.result["checks"].extend(bad)
        s.violation("ignores_weights", "with re-drawn weights the output stayed wrong: a stored "
                    "or cached result on a task whose output ignores its inputs")
        return s.check("weights" + tag, False, "%s: %s" % (bad[0]["name"], bad[0]["message"])), ""
    if passes_for(s, s.first_ref_sample, output_sample(ref_out)):
        return None, "re-drawn weights give the same output as well"
    s.result["notes"].append(
        "hardened: the task's output does not depend on its inputs (%d input sets gave one "
        "output, within the tolerance), so the candidate was also checked with re-drawn weights,"
        " and passed" % s.ref_outputs_seen)
    return s.check("weights" + tag, True), ""


# How the bench moves one floating input of a task whose output ignores its inputs as drawn
# (a loss that is a mean over millions of draws, e.g. KernelBench level 1's CrossEntropyLoss and
# HingeLoss): scaled (signs and zeros kept), then shifted. Mild on purpose: an honest kernel
# computes the same function there; the first move that takes the reference's output beyond the
# tolerance is the one used.
INPUT_MOVES = (("x4", lambda t: t * 4), ("+1", lambda t: t + 1))

# The rule of a solution that matches the reference on the task's own inputs but not on moved
# ones, while its output does move: the task's inputs cannot tell its output from a stored one,
# and moved inputs say it does not compute the task's function everywhere. No speed credit
# (gpu_bench/reward.h); the evaluation is not failed, since it is right on the task's inputs.
UNVERIFIED_OUTPUT = "output_unverified"


def moved_inputs(inputs):
    """(index, move name, a copy of the inputs with that one input moved), for every non-empty
    floating tensor input in order and every move of INPUT_MOVES."""
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            for name, move in INPUT_MOVES:
                moved = clone_inputs(inputs)
                moved[i] = move(moved[i])
                yield i, name, moved


def all_finite(out):
    return all(bool(torch.isfinite(t).all()) for t in compare.flatten_outputs(out)
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def first_telling_move(s, inputs):
    """(index, move name, moved inputs, the reference's output on them) of the first move
    (moved_inputs) that takes the reference's output beyond the tolerance around its first
    output, finite; None when none does."""
    for i, name, moved in moved_inputs(inputs):
        with torch.no_grad():
            probe = s.ref(*clone_inputs(moved))
        if all_finite(probe) and not passes_for(s, s.first_ref_sample, output_sample(probe)):
            return i, name, moved, probe
    return None


def inputs_recheck(s, dev, input_seed, poison):
    """The second way to harden a task whose output ignores its inputs: one input moved
    (moved_inputs) so far that the reference's output leaves the tolerance around its first
    output, and the candidate must follow it. A candidate whose output does not move at all is a
    stored answer (rejected: ignores_inputs); one that moves elsewhere is right only on the
    task's own inputs (UNVERIFIED_OUTPUT: no speed credit). Returns the outcome, or None with the
    reason when no move changes the reference's output (beyond the tolerance, and finite)."""
    move = first_telling_move(s, s.make_inputs(input_seed))
    if move is None:
        return None, ("no input scaled by 4 or shifted by 1 alone moves its output beyond the "
                      "tolerance")
    i, name, moved, ref_out = move
    what = "input %d %s" % (i, name)
    tag = "[%s,seed=%d]" % (what, input_seed)
    # The reference already ran on (a copy of) the moved inputs; the candidate gets them.
    ran, bad, _, out = rerun_against_reference(s, dev, moved, None, tag, poison, ref_out)
    if not ran:
        return False, ""
    if not bad:
        s.result["notes"].append(
            "hardened: the task's output does not depend on its inputs as drawn (%d input sets "
            "gave one output, within the tolerance), so the candidate was also checked with input "
            "%d %s, and passed"
            % (s.ref_outputs_seen, i, "scaled by 4" if name == "x4" else "shifted by 1"))
        return s.check("inputs" + tag, True), ""
    if passes_for(s, s.first_ref_sample, output_sample(out)):
        s.result["checks"].extend(bad)
        s.violation("ignores_inputs", "with %s the output stayed the task's first answer: a "
                    "stored result on a task whose output ignores its inputs as drawn" % what)
        return s.check("inputs" + tag, False,
                       "%s: %s" % (bad[0]["name"], bad[0]["message"])), ""
    # The mismatch is reported in the violation, not failed: the evaluation stands.
    s.violation(UNVERIFIED_OUTPUT,
                "right on the task's inputs, whose output does not depend on them, but not with "
                "%s (%s: %s): a stored answer cannot be ruled out, so this evaluation earns no "
                "speed credit" % (what, bad[0]["name"], bad[0]["message"]))
    return s.check(UNVERIFIED_OUTPUT, True, what), ""


def harden(s, dev, rng, poison):
    """A task whose output ignores its inputs (input_insensitive): re-drawn weights, then moved
    inputs; when neither changes the reference's output, not_hardened."""
    verdict, why_weights = weights_recheck(s, dev, rng.getrandbits(63), rng.getrandbits(63),
                                           poison)
    if verdict is not None:
        return verdict
    verdict, why_inputs = inputs_recheck(s, dev, rng.getrandbits(63), poison)
    if verdict is not None:
        return verdict
    return not_hardened(s, "%s, and %s" % (why_weights, why_inputs))


def not_hardened(s, why):
    """Nothing the bench can vary tells a stored answer from a computed one. An output that does
    not change at all with the inputs (the filter's rule: by at most CONSTANT_RTOL of its size) is
    a constant task: flagged, no speed credit. One that changes, but by less than the tolerance
    and not even when an input is moved, only gets a note: its honest solutions keep their
    credit."""
    if not constant_output(s):
        s.result["notes"].append(
            "not hardened: the task's output changes with its inputs by less than the tolerance "
            "(at most %.2g of its size over %d input sets); %s; so a stored answer would pass "
            "its checks; the evaluation keeps its speed credit" %
            (s.ref_max_change, s.ref_outputs_seen, why))
        return True
    s.violation("constant_output_task",
                "the task's output depends neither on its inputs (%d input sets gave one output) "
                "nor on anything the bench can vary (%s): a stored answer cannot be told from a "
                "computed one, so this evaluation earns no speed credit"
                % (s.ref_outputs_seen, why))
    # A passed check of that name puts the finding in the audit record's checks_run too, where a
    # stored evaluation keeps it (the violations are not stored).
    return s.check("constant_output_task", True, why)


def run(request, options, result, t0):
    t_import = time.perf_counter()
    result["breakdown_s"]["startup"] = t_import - t0
    if not torch.cuda.is_available():
        raise HarnessError("unavailable", "harness.no_gpu",
                           "torch.cuda.is_available() is False on this node")
    s = Session(request, options, result)
    try:
        dev = device_mod.Device(s.index)
    except Exception as e:  # noqa: BLE001
        raise HarnessError("unavailable", "harness.no_gpu", "cuda:%d: %s" % (s.index, e))
    s.dev = dev
    t_setup = time.perf_counter()
    result["breakdown_s"]["cuda_init"] = t_setup - t_import
    result["versions"] = dev.versions()
    result["precision_flags"] = precision_flags(bool(options["allow_tf32"]))
    dev.disable_persisting_l2()
    s.load_task()
    source = _read(request["model_new_py"], "model_new.py")
    seeds = [int(x) for x in request.get("seeds") or []]
    rng = random.Random(int.from_bytes(os.urandom(8), "little"))
    while len(seeds) < int(options["verify_input_sets"]):
        seeds.append(rng.getrandbits(63))
    result["seeds"] = seeds
    t_load = time.perf_counter()
    result["breakdown_s"]["setup"] = t_load - t_setup
    ok = s.static_policy(source) and s.load_solution(source, dev.cudart)
    ok = ok and s.build_models(seeds[0])
    result["breakdown_s"]["load"] = time.perf_counter() - t_load
    t_checks = time.perf_counter()
    if ok:
        for i, seed in enumerate(seeds):
            last = i == len(seeds) - 1
            t_seed = time.perf_counter()
            passed = verify_one(s, dev, seed, "[seed=%d]" % seed, bool(options["poison_memory"]),
                                i == 0, rng.getrandbits(63) if last else None)
            # The first input set pays every first use (kernels loaded, allocator grown): its own
            # figure, and the others' mean.
            key = "checks.first_set" if i == 0 else "checks.other_sets_mean"
            took = time.perf_counter() - t_seed
            if i > 0:
                took = (result["breakdown_s"].get(key, 0.0) * (i - 1) + took) / i
            result["breakdown_s"][key] = took
            if not passed:
                ok = False
                break
    if ok and input_insensitive(s):
        t_harden = time.perf_counter()
        ok = harden(s, dev, rng, bool(options["poison_memory"]))
        result["breakdown_s"]["checks.harden"] = time.perf_counter() - t_harden
    if ok and read_precision_flags() != result["precision_flags"]:
        s.violation("precision_flags_changed", "precision flags changed while the candidate ran:"
                    " %s" % read_precision_flags())
        ok = s.check("precision_flags", False, "the candidate changed global precision flags")
    result["breakdown_s"]["checks"] = time.perf_counter() - t_checks
    if ok and request.get("mode") == "benchmark":
        import timing

        ok = timing.benchmark(s, dev, rng)
    if ok and request.get("mode") == "profile":
        import profile_mode

        result["profile_report"] = profile_mode.profile(s, dev, seeds[0])
    result["passed"] = bool(ok) and all(c["passed"] for c in result["checks"])
