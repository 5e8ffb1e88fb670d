"""compare.tensor_stats: the chunked torch statistics equal tolerance.stats_from_lists (the
definition) whatever the chunk size. Needs torch (skipped without it); runs on the CPU, and on
the GPU too where there is one."""

import math
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
    import compare  # noqa: E402 (imports torch)
import tolerance  # noqa: E402


def sample(n, seed, special):
    rng = random.Random(seed)
    ref = [rng.uniform(-3, 3) for _ in range(n)]
    cand = [r + rng.gauss(0, 0.004) for r in ref]
    for i in rng.sample(range(n), special):
        kind = rng.randrange(5)
        if kind == 0:
            cand[i] = float("nan")
        elif kind == 1:
            cand[i] = ref[i] = float("nan")
        elif kind == 2:
            cand[i] = float("inf")
        elif kind == 3:
            ref[i] = 0.0
        else:
            cand[i] += 1.0
    return cand, ref


@unittest.skipIf(torch is None, "torch is not installed here")
class TensorStatsTest(unittest.TestCase):
    def devices(self):
        return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

    def assert_same(self, got, want):
        for key in ("numel", "bad_count", "first_bad_index"):
            self.assertEqual(got[key], want[key], key)
        for key in ("max_abs", "max_rel", "diff_norm", "ref_norm"):
            g, w = got[key], want[key]
            if math.isinf(w):
                self.assertEqual(g, w, key)
            else:
                self.assertAlmostEqual(g, w, delta=1e-5 * max(1.0, abs(w)), msg=key)

    def test_chunked_equals_definition(self):
        atol, rtol = tolerance.tolerance_for("cuda-agent", "float32")
        for seed, special in ((1, 0), (2, 9), (3, 40)):
            cand, ref = sample(1000, seed, special)
            want = tolerance.stats_from_lists(
                [float(torch.tensor(c, dtype=torch.float32)) for c in cand],
                [float(torch.tensor(r, dtype=torch.float32)) for r in ref], atol, rtol)
            for dev in self.devices():
                c = torch.tensor(cand, dtype=torch.float32, device=dev).view(10, 100)
                r = torch.tensor(ref, dtype=torch.float32, device=dev).view(10, 100)
                for chunk in (7, 128, 1 << 24):
                    self.assert_same(compare.tensor_stats(c, r, atol, rtol, chunk=chunk), want)

    def test_integers_compare_exactly(self):
        big = 2 ** 62
        c = torch.tensor([big, big + 1, 5], dtype=torch.int64)
        r = torch.tensor([big, big, 5], dtype=torch.int64)
        s = compare.tensor_stats(c, r, 0, 0, chunk=2)
        self.assertEqual(s["bad_count"], 1)  # float64 alone would call big + 1 equal to big
        self.assertEqual(s["first_bad_index"], 1)


if __name__ == "__main__":
    unittest.main()
