"""Static policy for model_new.py: an AST allow-list (DESIGN.md section 5).

model_new.py may build tensors, take views and call launchers of the injected `kernels` module.
This checker rejects, before the file runs, the constructs that let Python code do the work
itself, escape the runtime op guard, or tamper with the harness: imports beyond the allow-list,
builtins that reach code or files (eval, exec, open, getattr, ...), monkey-patching of modules,
dunder and private attribute access, frame and code introspection, tensor subclasses, and
exception handlers broad enough to swallow the guard's stop.

This module imports nothing beyond the standard library so that it is unit-tested on machines
without torch (tests/test_policy.py). It is one layer of several: the harness also runs
model_new.py with restricted builtins and ModelNew.forward under a dispatch-level op guard, and
the whole harness runs in an OS sandbox. A Python-level check alone is never a security boundary.
"""

import ast

# Modules model_new.py may import (and `from X import name` of).
ALLOWED_MODULES = frozenset(
    {"torch", "torch.nn", "torch.nn.functional", "math", "kernels", "typing", "__future__"}
)

# Builtins whose call (or mere mention) is refused: they reach code objects, files, the import
# system or arbitrary attributes by name.
FORBIDDEN_BUILTINS = frozenset(
    {
        "eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
        "globals", "locals", "vars", "input", "breakpoint", "memoryview", "type", "id",
        "help", "exit", "quit", "object",
    }
)  # fmt: skip

# Attribute names refused wherever they appear (`x.<name>`): ways out to the OS, the import
# system, other threads or streams, the dispatcher, the precision flags, and frame introspection.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        # the OS, processes, files, threads (torch re-exports some of these modules)
        "os", "sys", "subprocess", "ctypes", "builtins", "importlib", "threading",
        "multiprocessing", "platform", "inspect", "io", "pathlib", "shutil", "socket", "glob",
        "signal", "gc", "weakref", "pickle", "marshal", "types", "functools", "time",
        # torch areas that bypass the guard, touch other streams, or change global state
        "cuda", "utils", "library", "ops", "backends", "jit", "compile", "autograd",
        "distributed", "hub", "load", "save", "overrides", "fx", "export", "classes",
        "package", "serialization", "storage", "untyped_storage", "UntypedStorage",
        "TypedStorage", "from_file", "profiler", "futures", "Stream", "Event", "random",
        "manual_seed", "seed", "set_default_device", "set_default_dtype", "set_grad_enabled",
        "set_float32_matmul_precision", "set_flush_denormal", "set_num_threads",
        "use_deterministic_algorithms", "set_printoptions", "register_forward_hook",
        "register_forward_pre_hook", "register_full_backward_hook",
        # frames, code objects, generators
        "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_globals",
        "f_locals", "f_back", "f_builtins", "f_code", "tb_frame", "tb_next", "co_code",
        "func_globals", "func_code",
    }
)  # fmt: skip

# Dunder names that may be used: the constructor (super().__init__) and module metadata.
ALLOWED_DUNDERS = frozenset({"__init__", "__name__"})

# Class bases model_new.py may derive from.
ALLOWED_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module"})


class Finding:
    """One broken rule: a stable snake_case rule name, the line, and what was found."""

    __slots__ = ("rule", "line", "detail")

    def __init__(self, rule, line, detail):
        self.rule = rule
        self.line = line
        self.detail = detail

    def __repr__(self):
        return "Finding(%r, %r, %r)" % (self.rule, self.line, self.detail)

    def to_dict(self):
        return {"rule": "ast." + self.rule, "detail": "line %d: %s" % (self.line, self.detail)}


def _dotted(node):
    """'torch.nn.Module' for an Attribute/Name chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _root_name(node):
    """The Name at the bottom of an attribute/subscript chain, or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Checker(ast.NodeVisitor):
    def __init__(self):
        self.findings = []
        self.module_aliases = set()

    def add(self, rule, node, detail):
        self.findings.append(Finding(rule, getattr(node, "lineno", 0), detail))

    # --- imports ---------------------------------------------------------------------------
    def visit_Import(self, node):
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                self.add("forbidden_import", node, "import of '%s' (allowed: %s)"
                         % (alias.name, ", ".join(sorted(ALLOWED_MODULES))))
            bound = alias.asname or alias.name.split(".")[0]
            self.module_aliases.add(bound)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level or module not in ALLOWED_MODULES:
            self.add("forbidden_import", node, "from-import of '%s'" % ("." * node.level + module))
            return
        for alias in node.names:
            full = module + "." + alias.name
            if alias.name == "*":
                self.add("star_import", node, "'from %s import *'" % module)
            elif alias.name in FORBIDDEN_ATTRIBUTES or alias.name.startswith("_"):
                self.add("forbidden_attribute", node, "'from %s import %s'" % (module, alias.name))
            elif full in ALLOWED_MODULES:
                self.module_aliases.add(alias.asname or alias.name)

    # --- names and attributes --------------------------------------------------------------
    def visit_Name(self, node):
        if node.id in FORBIDDEN_BUILTINS:
            self.add("forbidden_builtin", node, "use of builtin '%s'" % node.id)
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDERS:
            self.add("dunder_name", node, "name '%s'" % node.id)

    def visit_Attribute(self, node):
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDERS:
                self.add("dunder_attribute", node, "attribute '%s'" % attr)
        elif attr.startswith("_") and _root_name(node) != "self":
            self.add("private_attribute", node, "private attribute '%s'" % attr)
        elif attr in FORBIDDEN_ATTRIBUTES:
            self.add("forbidden_attribute", node, "attribute '%s' (%s)"
                     % (attr, _dotted(node) or "expression"))
        self.generic_visit(node)

    # --- assignments: only to names and to attributes of `self` ----------------------------
    def _check_target(self, target, node):
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._check_target(t, node)
        elif isinstance(target, ast.Starred):
            self._check_target(target.value, node)
        elif isinstance(target, ast.Attribute):
            root = _root_name(target)
            if root in self.module_aliases:
                self.add("module_patch", node, "assignment to '%s' patches a module"
                         % (_dotted(target) or target.attr))
            elif root != "self":
                self.add("foreign_attribute_assignment", node,
                         "assignment to attribute '%s' of something other than self" % target.attr)
        elif isinstance(target, ast.Name) and target.id in self.module_aliases:
            self.add("module_patch", node, "rebinding module name '%s'" % target.id)

    def visit_Assign(self, node):
        for t in node.targets:
            self._check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            if isinstance(t, ast.Attribute):
                self.add("foreign_attribute_assignment", node, "del of attribute '%s'" % t.attr)
        self.generic_visit(node)

    # --- definitions ----------------------------------------------------------------------
    def visit_ClassDef(self, node):
        for base in node.bases:
            name = _dotted(base)
            if name not in ALLOWED_BASES:
                self.add("forbidden_base", node, "class '%s' derives from '%s' (only nn.Module)"
                         % (node.name, name or ast.dump(base)))
        for kw in node.keywords:
            self.add("forbidden_base", node, "class '%s' has keyword '%s'" % (node.name, kw.arg))
        if node.decorator_list:
            self.add("decorator", node, "class '%s' is decorated" % node.name)
        self.generic_visit(node)

    def _check_function(self, node):
        if node.name.startswith("__") and node.name.endswith("__") and node.name != "__init__":
            self.add("dunder_definition", node, "definition of '%s'" % node.name)
        if node.decorator_list:
            self.add("decorator", node, "function '%s' is decorated" % node.name)
        self.generic_visit(node)

    visit_FunctionDef = _check_function
    visit_AsyncFunctionDef = _check_function

    def visit_Global(self, node):
        self.add("global_statement", node, "'global %s'" % ", ".join(node.names))

    def visit_Nonlocal(self, node):
        self.add("global_statement", node, "'nonlocal %s'" % ", ".join(node.names))

    def visit_ExceptHandler(self, node):
        name = _dotted(node.type) if node.type is not None else None
        if node.type is None or name in ("BaseException", "SystemExit", "KeyboardInterrupt",
                                         "GeneratorExit"):
            self.add("broad_except", node, "'except %s' can swallow the harness's stop"
                     % (name or ""))
        self.generic_visit(node)

    def visit_Await(self, node):
        self.add("async", node, "await")
        self.generic_visit(node)


def check_source(source, filename="model_new.py"):
    """Returns the findings for one file's source text, in line order; [] when it is clean."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return [Finding("syntax_error", e.lineno or 0, "%s: %s" % (filename, e.msg))]
    checker = _Checker()
    # Two passes: aliases first, so `nn.Module.x = 1` before `import torch.nn as nn` counts.
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                checker.module_aliases.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "") in ALLOWED_MODULES:
            for alias in node.names:
                if (node.module + "." + alias.name) in ALLOWED_MODULES:
                    checker.module_aliases.add(alias.asname or alias.name)
    checker.visit(tree)
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        checker.findings.append(Finding("no_model_new", 0, "no top-level class ModelNew"))
    checker.findings.sort(key=lambda f: f.line)
    return checker.findings
