"""The run-time import hook of model_new.py: its own imports stay within the allow-list, while
torch's lazy imports that C++ code starts from inside the candidate's forward (PyImport_Import
finds __import__ in the running frame's builtins) still work. Needs torch; skipped without it."""
import ctypes
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

try:
    import torch  # noqa: F401
    import evaluate
except ImportError:  # no torch on this machine
    evaluate = None


@unittest.skipIf(evaluate is None, "torch is not installed for this python")
class ImportGuardTest(unittest.TestCase):
    def candidate_module(self):
        m = types.ModuleType("model_new")
        m.__dict__["__builtins__"] = evaluate._restricted_builtins()
        exec("def go(f, name):\n    return f(name)\n", m.__dict__)
        return m

    def test_candidate_imports_are_limited(self):
        m = self.candidate_module()
        exec("import torch\nimport math\n", m.__dict__)
        for stmt in ("import os", "import ctypes", "import importlib", "from . import x"):
            with self.assertRaises(ImportError, msg=stmt):
                exec(stmt + "\n", m.__dict__)

    def test_imports_started_by_c_code_under_the_candidates_frame(self):
        m = self.candidate_module()
        c_import = ctypes.pythonapi.PyImport_ImportModule
        c_import.restype = ctypes.py_object
        c_import.argtypes = [ctypes.c_char_p]
        self.assertEqual(m.go(c_import, b"torch.fft").__name__, "torch.fft")
        with self.assertRaises(ImportError):
            m.go(c_import, b"json")


if __name__ == "__main__":
    unittest.main()
