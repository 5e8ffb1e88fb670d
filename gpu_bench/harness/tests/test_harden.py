"""evaluate.harden on a task whose output ignores its inputs as drawn (KernelBench level 1's
HingeLoss shape: a mean over many draws), on the CPU: an honest solution is hardened by a moved
input, a stored answer is rejected, one right only on the task's own inputs earns no speed credit,
and a task no move changes stays a constant task. Needs torch (skipped without it); the checks
that insist on CUDA outputs, the device synchronise and the op guard (these candidates are torch
code, which a real ModelNew may not run) are stubbed out here, nothing else."""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:
    import torch
except ImportError:  # this machine has no torch: the GPU node runs these
    torch = None

if torch is not None:
    import evaluate  # noqa: E402 (imports torch)

N = 1 << 16


def hinge_inputs():
    return [torch.rand(N), torch.randint(0, 2, (N,)).float() * 2 - 1]


class NoGuard:
    violations = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeDevice:
    def poison_free_memory(self, reserve_big_block=False):
        pass


def session(ref, new, make_inputs):
    result = {"notes": [], "checks": [], "violations": []}
    s = evaluate.Session({}, {"tolerance_profile": "cuda-agent"}, result)
    s.dev_name = "cpu"
    s.ref, s.new = ref, new
    s.make_inputs = lambda seed: (torch.manual_seed(seed), make_inputs())[1]
    for seed in (1, 2, 3):  # what verify_one runs and notes about the reference's outputs
        with torch.no_grad():
            new(*s.make_inputs(seed))
            evaluate.note_reference_output(s, ref(*s.make_inputs(seed)))
    return s, result


if torch is not None:
    class Hinge(torch.nn.Module):
        def forward(self, p, t):
            return torch.mean(torch.clamp(1 - p * t, min=0))

    class Saturating(torch.nn.Module):
        """Right while p < 2, as every drawn p is: saturates p there on the t = -1 side."""

        def forward(self, p, t):
            return torch.mean(torch.where(t > 0, (1 - p).clamp(min=0), 1 + p.clamp(max=2)))

    class NoClamp(torch.nn.Module):
        """Skips the clamp, right while p < 1: with balanced targets its mean is 1 whatever p,
        which cannot be told from a stored answer."""

        def forward(self, p, t):
            return torch.mean(torch.where(t > 0, 1 - p, 1 + p))

    class Stored(torch.nn.Module):
        """Computes once, then replays its first answer."""

        def __init__(self):
            super().__init__()
            self.answer = None

        def forward(self, p, t):
            if self.answer is None:
                self.answer = torch.mean(torch.clamp(1 - p * t, min=0))
            return self.answer.clone()

    class OneLogitSoftmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x[:, :1], dim=1)


@unittest.skipIf(torch is None, "no torch on this machine")
class HardenTest(unittest.TestCase):
    def setUp(self):
        self.saved = (evaluate.guard.is_plain_dense_cuda, evaluate.torch.cuda.synchronize,
                      evaluate.guard.OpGuard)
        evaluate.guard.is_plain_dense_cuda = lambda t, index: (True, "")
        evaluate.torch.cuda.synchronize = lambda: None
        evaluate.guard.OpGuard = NoGuard

    def tearDown(self):
        (evaluate.guard.is_plain_dense_cuda, evaluate.torch.cuda.synchronize,
         evaluate.guard.OpGuard) = self.saved

    def harden(self, new, ref=None, make_inputs=hinge_inputs):
        s, result = session(ref or Hinge(), new, make_inputs)
        self.assertTrue(evaluate.input_insensitive(s), "the task must ignore its inputs as drawn")
        ok = evaluate.harden(s, FakeDevice(), random.Random(7), False)
        return ok, result, [v["rule"] for v in result["violations"]]

    def test_an_honest_solution_is_hardened_by_a_moved_input(self):
        ok, result, rules = self.harden(Hinge())
        self.assertTrue(ok)
        self.assertEqual(rules, [])
        self.assertTrue(any(c["name"].startswith("inputs[input 0 x4,") and c["passed"]
                            for c in result["checks"]), result["checks"])
        self.assertTrue(any(n.startswith("hardened:") for n in result["notes"]), result["notes"])

    def test_a_stored_answer_is_rejected(self):
        ok, result, rules = self.harden(Stored())
        self.assertFalse(ok)
        self.assertIn("ignores_inputs", rules)

    def test_a_solution_right_only_on_the_drawn_inputs_keeps_its_pass_without_speed_credit(self):
        ok, result, rules = self.harden(Saturating())
        self.assertTrue(ok)
        self.assertEqual(rules, [evaluate.UNVERIFIED_OUTPUT])
        self.assertTrue(all(c["passed"] for c in result["checks"]), result["checks"])

    def test_a_solution_whose_output_stays_put_when_the_reference_moves_is_rejected(self):
        ok, result, rules = self.harden(NoClamp())
        self.assertFalse(ok)
        self.assertIn("ignores_inputs", rules)

    def test_a_task_no_move_changes_is_a_constant_task(self):
        ok, result, rules = self.harden(OneLogitSoftmax(), ref=OneLogitSoftmax(),
                                        make_inputs=lambda: [torch.randn(8, 4)])
        self.assertTrue(ok)
        self.assertEqual(rules, ["constant_output_task"])
        why = result["violations"][0]["detail"]
        self.assertIn("no weights to re-draw", why)
        self.assertIn("scaled by 4 or shifted by 1", why)

    def test_moves_touch_one_floating_input_at_a_time(self):
        inputs = [torch.ones(3), torch.arange(3), 2.0, torch.zeros(0)]
        moves = [(i, name, [x.tolist() if isinstance(x, torch.Tensor) else x for x in m])
                 for i, name, m in evaluate.moved_inputs(inputs)]
        self.assertEqual(moves, [(0, "x4", [[4.0] * 3, [0, 1, 2], 2.0, []]),
                                 (0, "+1", [[2.0] * 3, [0, 1, 2], 2.0, []])])
        self.assertEqual(inputs[0].tolist(), [1.0] * 3, "the originals stay as they were")


if __name__ == "__main__":
    unittest.main()
