"""filter_task.py on small tasks, on the CPU (the checks are the same code as on a GPU; timing uses
perf_counter there). Skipped where this python cannot import torch; the GPU run is covered by
tasks/gpu_filter_gpu_test.cpp."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)
sys.path.insert(0, HARNESS)

import filter_task  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

GOOD = HEADER + """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x, y):
        return torch.relu(self.fc(x)) * y

def get_inputs():
    return [torch.randn(64, 32), torch.randn(64, 32)]

def get_init_inputs():
    return [32]
"""

DROPOUT = GOOD.replace("return torch.relu(self.fc(x)) * y",
                       "return F.dropout(self.fc(x), 0.5, self.training) * y")
RANDOM = GOOD.replace("return torch.relu(self.fc(x)) * y",
                      "return self.fc(x) * y + torch.rand_like(y)")
CONSTANT = GOOD.replace("return torch.relu(self.fc(x)) * y", "return self.fc(x) * y * 0")
SOFTMAX_SUM = GOOD.replace("return torch.relu(self.fc(x)) * y",
                           "return torch.softmax(self.fc(x) * y, dim=1).sum(dim=1)")
IGNORES_Y = GOOD.replace("return torch.relu(self.fc(x)) * y", "return self.fc(x) + 0 * y.shape[0]")
NAN = GOOD.replace("return torch.relu(self.fc(x)) * y", "return torch.log(-(self.fc(x) ** 2) - 1)")
BROKEN = GOOD.replace("def get_inputs", "def get_inputz")
RAISES = GOOD.replace("return torch.relu(self.fc(x)) * y", "return self.fc(x) @ y")


def run(source, **options):
    opts = {"device": "cpu", "eager_min_ms": 0.0, "eager_max_ms": 1e6, "timed_trials": 3,
            "warmup_trials": 1, "compile": False}
    opts.update(options)
    with tempfile.TemporaryDirectory() as d:
        task = os.path.join(d, "model.py")
        with open(task, "w") as f:
            f.write(source)
        req = os.path.join(d, "request.json")
        res = os.path.join(d, "result.json")
        with open(req, "w") as f:
            json.dump({"format": filter_task.FORMAT_REQUEST, "version": filter_task.VERSION,
                       "task_py": task, "options": opts}, f)
        proc = subprocess.run([sys.executable, "-I", "-B", os.path.join(HARNESS, "filter_task.py"),
                               "--request", req, "--result", res],
                              capture_output=True, text=True, timeout=300)
        with open(res) as f:
            result = json.load(f)
    result["exit"] = proc.returncode
    result["failed"] = next((c for c in result["checks"] if not c["passed"]), None)
    return result


class PureParts(unittest.TestCase):
    def test_stochastic_op_names(self):
        self.assertEqual(filter_task.stochastic_ops(
            ["aten::addmm", "aten::bernoulli_", "aten::native_dropout", "aten::_fused_dropout",
             "aten::relu", "aten::normal_", "aten::randn_like"]),
            ["aten::_fused_dropout", "aten::bernoulli_", "aten::native_dropout", "aten::normal_",
             "aten::randn_like"])
        self.assertEqual(filter_task.op_base_name("aten::uniform_"), "uniform")

    def test_bad_request_is_an_error(self):
        result = filter_task.new_result()
        with self.assertRaises(filter_task.FilterError) as e:
            filter_task.run_request({"format": "something else", "version": 1}, result)
        self.assertEqual(e.exception.code, "filter.request")


@unittest.skipUnless(HAS_TORCH, "this python cannot import torch")
class OnCpu(unittest.TestCase):
    def assertDropped(self, result, check, words):
        self.assertEqual(result["exit"], 0, result)
        self.assertFalse(result["passed"], result)
        self.assertEqual(result["failed"]["name"], check, result)
        self.assertIn(words, result["failed"]["reason"])

    def test_good_task_passes_every_check(self):
        r = run(GOOD)
        self.assertEqual(r["exit"], 0, r)
        self.assertTrue(r["passed"], r)
        self.assertEqual([c["name"] for c in r["checks"]], filter_task.CHECKS)
        self.assertGreater(r["eager_ms"], 0)

    def test_dropout_in_train_mode_is_stochastic(self):
        self.assertDropped(run(DROPOUT), "stochastic_ops", "in train mode")

    def test_random_op_in_forward(self):
        self.assertDropped(run(RANDOM), "stochastic_ops", "rand_like")

    def test_constant_output(self):
        self.assertDropped(run(CONSTANT), "not_constant", "same outputs")

    def test_output_that_rounds_to_the_same_value_is_constant(self):
        self.assertDropped(run(SOFTMAX_SUM), "not_constant", "")

    def test_ignored_input(self):
        self.assertDropped(run(IGNORES_Y), "input_sensitive", "input(s) [1]")

    def test_nan_output(self):
        self.assertDropped(run(NAN), "finite", "NaN")

    def test_missing_function(self):
        r = run(BROKEN)
        self.assertDropped(r, "load", "get_inputs")
        self.assertIn("runs_eager", r["not_run"])

    def test_exception_in_forward(self):
        self.assertDropped(run(RAISES), "runs_eager", "RuntimeError")

    def test_time_window(self):
        self.assertDropped(run(GOOD, eager_min_ms=1e5, eager_max_ms=1e6), "eager_time", "below")
        self.assertDropped(run(GOOD, eager_min_ms=0.0, eager_max_ms=1e-9), "eager_time", "above")

    def test_no_gpu_is_an_error_not_a_verdict(self):
        import torch

        if torch.cuda.is_available():
            self.skipTest("this machine has a GPU")
        r = run(GOOD, device="cuda")
        self.assertEqual(r["exit"], 1)
        self.assertEqual(r["error"]["code"], "filter.no_gpu")

    def test_locks_are_taken_when_a_lock_dir_is_given(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("turnstile.lock", "gpu.lock"):
                open(os.path.join(d, name), "w").close()
            r = run(GOOD, lock_dir=d)
        self.assertTrue(r["passed"], r)

    def test_preload_then_main_as_the_zygote_runs_it(self):
        """preload() (zygote.py calls it before forking) leaves one thread and CUDA untouched,
        and main(argv, t0) afterwards gives the fresh child's verdict with a free import."""
        with tempfile.TemporaryDirectory() as d:
            task = os.path.join(d, "model.py")
            with open(task, "w") as f:
                f.write(CONSTANT)
            req = os.path.join(d, "request.json")
            res = os.path.join(d, "result.json")
            with open(req, "w") as f:
                json.dump({"format": filter_task.FORMAT_REQUEST, "version": filter_task.VERSION,
                           "task_py": task, "options": {"device": "cpu", "eager_min_ms": 0.0,
                                                        "eager_max_ms": 1e6, "compile": False}},
                          f)
            script = (
                "import os, sys, threading, time\n"
                "sys.path.insert(0, %r)\n"
                "import filter_task, torch\n"
                "facts = filter_task.preload()\n"
                "assert facts['torch'] == torch.__version__, facts\n"
                "assert not torch.cuda.is_initialized()\n"
                "assert threading.active_count() == 1\n"
                "assert len(os.listdir('/proc/self/task')) == 1, os.listdir('/proc/self/task')\n"
                "sys.exit(filter_task.main(['--request', %r, '--result', %r], time.perf_counter()))\n"
                % (HARNESS, req, res))
            proc = subprocess.run([sys.executable, "-I", "-B", "-c", script],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(res) as f:
                r = json.load(f)
        self.assertFalse(r["passed"], r)
        self.assertEqual(next(c for c in r["checks"] if not c["passed"])["name"], "not_constant")
        self.assertLess(r["phases_s"]["import_torch"], 0.5)


if __name__ == "__main__":
    unittest.main()
