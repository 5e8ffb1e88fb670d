"""tolerance.py: profiles and the pass/fail rule. Standard library only (no torch, no GPU)."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tolerance  # noqa: E402


def verdict(cand, ref, profile="cuda-agent", dtype="float32"):
    atol, rtol = tolerance.tolerance_for(profile, dtype)
    s = tolerance.stats_from_lists(cand, ref, atol, rtol)
    return {name: (ok, msg) for name, ok, msg in
            tolerance.judge(s, atol, rtol, tolerance.rel_norm_limit(profile, dtype))}, s


class ToleranceTest(unittest.TestCase):
    def test_profiles(self):
        self.assertEqual(tolerance.tolerance_for("cuda-agent", "float32"), (1e-2, 1e-2))
        self.assertEqual(tolerance.tolerance_for("cuda-agent", "bfloat16"), (1e-2, 1e-2))
        self.assertEqual(tolerance.tolerance_for("strict", "float32"), (1e-4, 1e-4))
        self.assertEqual(tolerance.tolerance_for("strict", "float16"), (1e-2, 1e-2))
        self.assertEqual(tolerance.tolerance_for("strict", "int64"), (0.0, 0.0))
        with self.assertRaises(ValueError):
            tolerance.tolerance_for("lenient", "float32")
        self.assertAlmostEqual(tolerance.rel_norm_limit("cuda-agent", "float32"), 0.05)
        self.assertAlmostEqual(tolerance.rel_norm_limit("strict", "float32"), 5e-4)

    def test_identical_passes(self):
        v, s = verdict([1.0, -2.0, 3.5], [1.0, -2.0, 3.5])
        self.assertTrue(v["tolerance"][0] and v["rel_norm"][0])
        self.assertEqual(s["first_bad_index"], -1)
        self.assertEqual(s["max_abs"], 0.0)

    def test_within_tolerance_passes_strict_fails(self):
        ref = [1.0, 2.0, 3.0, 4.0]
        cand = [1.005, 2.0, 3.0, 4.0]
        self.assertTrue(verdict(cand, ref)[0]["tolerance"][0])
        v, s = verdict(cand, ref, "strict")
        self.assertFalse(v["tolerance"][0])
        self.assertEqual(s["first_bad_index"], 0)
        self.assertAlmostEqual(s["max_abs"], 0.005)
        self.assertAlmostEqual(s["max_rel"], 0.005)

    def test_zeros_fail_on_tiny_reference(self):
        ref = [1e-4 * (i % 7 - 3) for i in range(100)]  # all inside atol = 1e-2
        v, s = verdict([0.0] * 100, ref)
        self.assertTrue(v["tolerance"][0], "elementwise passes: that is the hole")
        self.assertFalse(v["rel_norm"][0])
        self.assertAlmostEqual(tolerance.rel_norm(s), 1.0)

    def test_scaled_output_fails_rel_norm(self):
        ref = [1e-3 * (i + 1) for i in range(50)]
        v, _ = verdict([0.9 * r for r in ref], ref)
        self.assertFalse(v["rel_norm"][0])
        v, _ = verdict([1.001 * r for r in ref], ref)
        self.assertTrue(v["rel_norm"][0])

    def test_all_zero_reference_skips_rel_norm(self):
        v, _ = verdict([0.0, 1e-3], [0.0, 0.0])
        self.assertTrue(v["rel_norm"][0])
        self.assertIn("not applicable", v["rel_norm"][1])
        self.assertTrue(v["tolerance"][0])

    def test_nan_and_inf(self):
        nan, inf = math.nan, math.inf
        v, s = verdict([nan, 1.0], [nan, 1.0])
        self.assertTrue(v["tolerance"][0])
        v, s = verdict([1.0, nan], [1.0, 2.0])
        self.assertFalse(v["tolerance"][0])
        self.assertEqual(s["first_bad_index"], 1)
        self.assertEqual(s["max_abs"], inf)
        v, s = verdict([inf, -inf], [inf, -inf])
        self.assertTrue(v["tolerance"][0])
        v, s = verdict([inf], [-inf])
        self.assertFalse(v["tolerance"][0])

    def test_first_mismatch_and_message(self):
        v, s = verdict([0, 0, 5, 0, 7], [0, 0, 0, 0, 0], dtype="int32")
        self.assertFalse(v["tolerance"][0])
        self.assertEqual(s["bad_count"], 2)
        self.assertEqual(s["first_bad_index"], 2)
        self.assertIn("first at flat index 2", v["tolerance"][1])
        self.assertIn("2 of 5 elements", v["tolerance"][1])

    def test_exact_dtypes_are_exact(self):
        v, _ = verdict([2], [1], dtype="int64")
        self.assertFalse(v["tolerance"][0])


if __name__ == "__main__":
    unittest.main()
