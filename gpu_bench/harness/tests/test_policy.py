"""policy.py: the AST allow-list of model_new.py. Standard library only (no torch, no GPU)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import policy  # noqa: E402

CLEAN = """
import torch, torch.nn as nn
import torch.nn.functional as F
from torch import nn as nn2
import math
import kernels

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._scale = math.sqrt(2.0)

    def forward(self, x):
        y = torch.empty((x.shape[0], self.linear.weight.shape[0]), device=x.device, dtype=x.dtype)
        try:
            kernels.gemm_launch(x, self.linear.weight, y, x.shape[0], int(x.shape[1]))
        except RuntimeError:
            raise
        return y.view(-1)[: y.numel()].reshape(y.shape)
"""


def rules(src):
    return [f.rule for f in policy.check_source(src)]


def body(stmt_lines):
    """A minimal valid model_new.py with these lines inside forward."""
    lines = "\n".join("        " + s for s in stmt_lines.splitlines())
    return ("import torch\nimport torch.nn as nn\nimport kernels\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n%s\n        return x\n" % lines)


class PolicyTest(unittest.TestCase):
    def test_clean_solution_passes(self):
        self.assertEqual(policy.check_source(CLEAN), [])

    def test_design_example_passes(self):
        src = ("import torch, torch.nn as nn\nimport kernels\nclass ModelNew(nn.Module):\n"
               "    def __init__(self):\n        super().__init__()\n"
               "    def forward(self, x):\n        y = torch.empty_like(x)\n"
               "        kernels.scale_relu_launch(x, y, x.numel())\n        return y\n")
        self.assertEqual(policy.check_source(src), [])

    def test_forbidden_imports(self):
        for mod in ("ctypes", "os", "sys", "threading", "subprocess", "importlib", "builtins",
                    "numpy", "torch.utils.cpp_extension", "time"):
            with self.subTest(mod=mod):
                self.assertIn("forbidden_import", rules("import %s\n" % mod + body("pass")))
        self.assertIn("forbidden_import", rules("from os import path\n" + body("pass")))
        self.assertIn("forbidden_import", rules("from . import x\n" + body("pass")))

    def test_forbidden_builtins(self):
        for call in ("eval('1')", "exec('x=1')", "open('/etc/passwd')", "__import__('os')",
                     "getattr(torch, 'add')", "setattr(torch, 'add', None)", "globals()",
                     "vars(torch)", "compile('1', 'f', 'eval')", "type(x)('y', (), {})"):
            with self.subTest(call=call):
                found = rules(body("y = " + call))
                self.assertTrue({"forbidden_builtin", "dunder_name"} & set(found), found)

    def test_module_patching(self):
        for stmt in ("torch.add = None", "torch.nn.functional.relu = None", "kernels.k = None",
                     "nn.Module.forward = None", "torch.cuda.Event.elapsed_time = None"):
            with self.subTest(stmt=stmt):
                self.assertIn("module_patch", rules(body(stmt)))
        self.assertIn("module_patch", rules(body("torch = None")))
        self.assertIn("foreign_attribute_assignment", rules(body("x.data = x")))

    def test_precision_flags_cannot_be_set(self):
        found = rules(body("torch.backends.cuda.matmul.allow_tf32 = True"))
        self.assertIn("module_patch", found)
        self.assertIn("forbidden_attribute", found)

    def test_dunder_and_private_access(self):
        for expr in ("x.__class__", "x.__dict__", "().__class__.__bases__[0].__subclasses__()",
                     "torch._C", "torch._dynamo", "x._base", "__builtins__"):
            with self.subTest(expr=expr):
                found = set(rules(body("y = " + expr)))
                self.assertTrue(found & {"dunder_attribute", "private_attribute", "dunder_name"},
                                found)
        self.assertEqual(rules(body("self._cache = 1\ny = self._cache")), [])

    def test_escape_routes(self):
        for expr in ("torch.cuda.Stream()", "torch.utils._python_dispatch", "torch.ops.aten.add",
                     "torch.library", "torch.os.system('x')", "torch.compile(self)",
                     "(lambda: 1).__code__", "g.gi_frame.f_back", "x.untyped_storage()"):
            with self.subTest(expr=expr):
                found = set(rules(body("y = " + expr)))
                self.assertTrue(found & {"forbidden_attribute", "dunder_attribute",
                                         "private_attribute"}, found)

    def test_tensor_subclass_and_hooks(self):
        src = ("import torch\nimport torch.nn as nn\nclass Lazy(torch.Tensor):\n"
               "    def __torch_function__(cls, *a):\n        pass\n" + body("pass").split(
                   "import kernels\n")[1])
        found = rules(src)
        self.assertIn("forbidden_base", found)
        self.assertIn("dunder_definition", found)

    def test_broad_except_and_globals(self):
        self.assertIn("broad_except", rules(body("try:\n    pass\nexcept:\n    pass")))
        self.assertIn("broad_except", rules(body("try:\n    pass\nexcept BaseException:\n    pass")))
        self.assertEqual(rules(body("try:\n    pass\nexcept Exception:\n    pass")), [])
        self.assertIn("global_statement", rules(body("global cache")))

    def test_missing_model_new_and_syntax_error(self):
        self.assertEqual(rules("import torch\n"), ["no_model_new"])
        found = policy.check_source("def (:\n")
        self.assertEqual(found[0].rule, "syntax_error")

    def test_findings_name_line_and_rule(self):
        found = policy.check_source("import torch\nimport os\n" + body("pass").split(
            "import torch\n")[1])
        self.assertEqual(found[0].rule, "forbidden_import")
        self.assertEqual(found[0].line, 2)
        d = found[0].to_dict()
        self.assertEqual(d["rule"], "ast.forbidden_import")
        self.assertTrue(d["detail"].startswith("line 2: "))


if __name__ == "__main__":
    unittest.main()
