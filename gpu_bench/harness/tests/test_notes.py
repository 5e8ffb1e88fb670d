"""evaluate.note_poisoning: the candidate runs on poisoned memory share one note that counts them.
Needs torch (evaluate imports it; skipped without it); no GPU."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:
    import torch  # noqa: F401
except ImportError:  # this machine has no torch: the GPU node runs these
    torch = None

if torch is not None:
    import evaluate  # noqa: E402 (imports torch)


@unittest.skipIf(torch is None, "no torch on this machine")
class PoisonNoteTest(unittest.TestCase):
    def test_one_note_counts_every_run(self):
        result = {"notes": ["before"], "checks": [], "violations": []}
        s = evaluate.Session({}, {}, result)
        evaluate.note_poisoning(s, 300)
        result["notes"].append("between")
        evaluate.note_poisoning(s, 100)
        evaluate.note_poisoning(s, 200)
        self.assertEqual(result["notes"], [
            "before",
            "poisoned free GPU memory before each of 3 candidate run(s): 100 to 300 bytes",
            "between"])


if __name__ == "__main__":
    unittest.main()
