"""timing.benchmark's loop on the CPU with the simulated GPU of test_trial_timer.py: two contenders
that do the same GPU work through host paths of different length (a Python forward that calls a
launcher, and one aten call) get the same median, every trial keeps its raw [event, wall, cover],
and the idle overhead is sampled before the trials and once per round. Needs torch (skipped
without it); the GPU-only pieces (memory queries, the device-wide synchronise, the op guard, the
CUDA-output check, the re-check after timing) are stubbed, the loop itself is not."""

import os
import random
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
except ImportError:  # this machine has no torch: the GPU node runs these
    torch = None

from test_trial_timer import SimGpu  # noqa: E402

if torch is not None:
    import evaluate  # noqa: E402 (imports torch)
    import timing  # noqa: E402
    from test_harden import NoGuard  # noqa: E402 (the op guard left out, as there)


class FakeDevice:
    def scrub(self, tensors):
        pass

    def persisting_l2_limit(self):
        return 0


if torch is not None:
    class Relu(torch.nn.Module):
        """ReLU on the CPU that also drives the simulated GPU: host_us before one 10 us kernel."""

        def __init__(self, gpu, host_us):
            super().__init__()
            self.gpu = gpu
            self.host_us = host_us

        def forward(self, x):
            self.gpu.host_work(self.host_us)
            self.gpu.kernel(10.0)
            return torch.relu(x)


OPTIONS = {"tolerance_profile": "cuda-agent", "input_memory_fraction": 0.25, "input_sets": 4,
           "measure_eager": True, "measure_compile": False, "warmup_trials": 2,
           "timed_trials": 10, "checked_trial_fraction": 0.2, "implausible_speedup": 50.0}


@unittest.skipIf(torch is None, "no torch on this machine")
class TimingLoopTest(unittest.TestCase):
    def run_benchmark(self, gpu, cand_host_us, eager_host_us):
        result = {"notes": [], "checks": [], "violations": [], "breakdown_s": {}}
        s = evaluate.Session({}, dict(OPTIONS), result)
        s.dev_name = "cpu"
        s.dev = FakeDevice()
        s.new = Relu(gpu, cand_host_us)
        s.ref = Relu(gpu, eager_host_us)
        s.make_inputs = lambda seed: [torch.randn(64, generator=torch.Generator().manual_seed(
            seed % (1 << 31)))]
        with mock.patch.object(torch.cuda, "synchronize", lambda: None), \
                mock.patch.object(torch.cuda, "mem_get_info", lambda i: (1 << 30, 1 << 31)), \
                mock.patch.object(torch.cuda, "memory_reserved", lambda i: 0), \
                mock.patch.object(torch.cuda, "memory_allocated", lambda i: 0), \
                mock.patch.object(evaluate.guard, "is_plain_dense_cuda", lambda t, i: (True, "")), \
                mock.patch.object(evaluate.guard, "OpGuard", NoGuard), \
                mock.patch.object(evaluate, "verify_one", lambda *a, **k: True), \
                mock.patch.object(timing, "TorchGpu", lambda dev: gpu):
            ok = timing.benchmark(s, s.dev, random.Random(3))
        self.assertTrue(ok, result["checks"])
        return result["timing"]

    def test_host_path_length_does_not_change_the_median(self):
        gpu = SimGpu(cover_us=60.0)
        t = self.run_benchmark(gpu, cand_host_us=25.0, eager_host_us=6.0)
        self.assertAlmostEqual(t["summary"]["candidate"]["median"], 10.0, places=3)
        self.assertAlmostEqual(t["summary"]["eager"]["median"], 10.0, places=3)
        self.assertAlmostEqual(t["speedup"]["eager"], 1.0, places=3)

    def test_raw_numbers_idle_samples_and_checked_trials(self):
        gpu = SimGpu(cover_us=60.0)
        t = self.run_benchmark(gpu, cand_host_us=5.0, eager_host_us=5.0)
        self.assertEqual(len(t["candidate_us"]), OPTIONS["timed_trials"])
        self.assertTrue(all(len(r) == 3 for r in t["raw_event_wall_us"]["candidate"]))
        self.assertEqual(t["idle_brackets"], timing.IDLE_CALIBRATION_BRACKETS + t["rounds"])
        self.assertEqual(set(t["wall_decided_trials"]), {"candidate", "eager"})
        self.assertEqual(len(t["checked_trials"]), 2)

    def test_a_host_bound_candidate_is_slower(self):
        gpu = SimGpu(cover_us=60.0)
        t = self.run_benchmark(gpu, cand_host_us=200.0, eager_host_us=6.0)
        self.assertGreater(t["summary"]["candidate"]["median"], 100.0)
        self.assertLess(t["speedup"]["eager"], 0.2)


if __name__ == "__main__":
    unittest.main()
