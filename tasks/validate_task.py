# Static check of KernelBench-format task files, run by tasks/python_validator.cpp as
# `python3 -I -c <this file>`. It never executes or imports a task: it parses the source with the
# `ast` module and reads what it needs from the tree.
#
# Protocol: one JSON object per stdin line, {"name": str, "source": str}; one JSON object per
# stdout line for each, in order, flushed at once:
#   {"name", "ok", "errors": [str], "warnings": [str], "imports": [str], "ops": [str],
#    "init_params": [str], "forward_params": [str],
#    "init_inputs": [{"expr", "value"?}], "inputs": [{"expr", "kind", ...}]}
# docs/formats/tasks.md describes the fields. A line that is not valid JSON gets an answer with
# ok = false, so the caller's count of answers always matches its count of requests.
import ast
import json
import sys

sys.setrecursionlimit(3000)

TENSOR_FACTORIES = {
    "rand": "float32", "randn": "float32", "zeros": "float32", "ones": "float32",
    "empty": "float32", "full": "float32", "randint": "int64", "rand_like": None,
    "randn_like": None, "zeros_like": None, "ones_like": None, "empty_like": None,
    "arange": "int64", "linspace": "float32", "tensor": None, "randperm": "int64",
}
DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "float64": "float64", "double": "float64", "int32": "int32",
    "int": "int32", "int64": "int64", "long": "int64", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
}
DTYPE_METHODS = {"float": "float32", "half": "float16", "double": "float64", "long": "int64",
                 "int": "int32", "bool": "bool", "bfloat16": "bfloat16"}
PASS_THROUGH_METHODS = {"cuda", "to", "contiguous", "clone", "detach", "requires_grad_", "abs",
                        "softmax", "log_softmax", "sigmoid", "tanh", "relu", "exp", "clamp",
                        "triu", "tril", "sign", "neg", "sqrt", "square", "normal_", "uniform_"}
SHAPE_PRESERVING_FUNCS = {"abs", "softmax", "sigmoid", "tanh", "relu", "exp", "clamp", "triu",
                          "tril", "sign", "neg", "sqrt", "square"}
NOT_OPS = {"nn.Module", "nn.Parameter", "nn.ModuleList", "nn.ModuleDict", "nn.Sequential",
           "nn.ParameterList", "nn.ParameterDict", "nn.Identity", "torch.no_grad",
           "torch.device", "torch.Size", "torch.manual_seed"}
# Methods that read metadata rather than compute: not operators.
NOT_TENSOR_OPS = {"size", "dim", "numel", "item", "tolist", "type", "element_size", "stride",
                  "is_contiguous", "data_ptr", "get_device"}
BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul"}
MAX_INT = 1 << 62


class Unknown:
    pass


UNKNOWN = Unknown()


def dotted(node, aliases):
    """'torch.nn.functional.relu' for F.relu (after `import torch.nn.functional as F`)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def canonical_op(name):
    for prefix, short in (("torch.nn.functional.", "F."), ("torch.nn.", "nn."), ("torch.", "torch.")):
        if name.startswith(prefix):
            op = short + name[len(prefix):]
            return None if op in NOT_OPS or op.startswith("nn.init.") else op
    return None


class Evaluator:
    """Folds constant expressions and tensor factory calls; anything else is UNKNOWN."""

    def __init__(self, aliases, env):
        self.aliases = aliases
        self.env = env

    def eval(self, node, depth=0):
        if depth > 60:
            return UNKNOWN
        d = depth + 1
        if isinstance(node, ast.Constant):
            v = node.value
            return v if v is None or isinstance(v, (bool, int, float, str)) else UNKNOWN
        if isinstance(node, ast.Name):
            return self.env.get(node.id, UNKNOWN)
        if isinstance(node, (ast.Tuple, ast.List)):
            vals = [self.eval(e, d) for e in node.elts]
            return UNKNOWN if any(v is UNKNOWN for v in vals) else vals
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.eval(node.operand, d)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
            return UNKNOWN
        if isinstance(node, ast.BinOp):
            return self.binop(node, d)
        if isinstance(node, ast.Attribute):
            if node.attr == "shape":
                base = self.eval(node.value, d)
                return base["shape"] if is_tensor(base) and base["shape"] is not None else UNKNOWN
            if node.attr in ("T", "mT"):
                base = self.eval(node.value, d)
                if is_tensor(base) and base["shape"] is not None and len(base["shape"]) >= 2:
                    sh = base["shape"]
                    sh = sh[::-1] if node.attr == "T" else sh[:-2] + [sh[-1], sh[-2]]
                    return dict(base, shape=sh)
                return UNKNOWN
            name = dotted(node, self.aliases)
            if name and name.startswith("torch.") and name[6:] in DTYPE_NAMES:
                return {"dtype": DTYPE_NAMES[name[6:]]}
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self.call(node, d)
        return UNKNOWN

    def binop(self, node, d):
        a, b = self.eval(node.left, d), self.eval(node.right, d)
        num = (int, float)
        if is_tensor(a) or is_tensor(b):  # elementwise with a number or a same-shaped tensor
            t = a if is_tensor(a) else b
            other = b if t is a else a
            if isinstance(node.op, ast.MatMult):
                return UNKNOWN
            if is_tensor(other) and other["shape"] != t["shape"] and other["shape"] != []:
                return UNKNOWN
            if not is_tensor(other) and not isinstance(other, num):
                return UNKNOWN
            floating = isinstance(other, float) or isinstance(node.op, ast.Div)
            if floating and t["dtype"] in ("int64", "int32", "int16", "int8", "uint8", "bool"):
                return dict(t, dtype="float32")
            return t
        if not (isinstance(a, num) and isinstance(b, num)) or isinstance(a, bool) or isinstance(b, bool):
            return UNKNOWN
        try:
            if isinstance(node.op, ast.Pow):
                if abs(b) > 64 or abs(a) > MAX_INT:
                    return UNKNOWN
                r = a ** b
            elif type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod):
                r = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                     ast.Div: lambda: a / b, ast.FloorDiv: lambda: a // b,
                     ast.Mod: lambda: a % b}[type(node.op)]()
            else:
                return UNKNOWN
        except (ZeroDivisionError, OverflowError, ValueError):
            return UNKNOWN
        if isinstance(r, int) and abs(r) > MAX_INT:
            return UNKNOWN
        return r if isinstance(r, num) else UNKNOWN

    def call(self, node, d):
        func = node.func
        if isinstance(func, ast.Attribute) and not (dotted(func, self.aliases) or "").startswith("torch."):
            # A method on a value: tensor.cuda(), .float(), ...
            base = self.eval(func.value, d)
            if isinstance(base, dict) and base.get("kind") == "tensor":
                if func.attr in PASS_THROUGH_METHODS:
                    for kw in node.keywords:
                        dt = self.eval(kw.value, d)
                        if kw.arg == "dtype" and isinstance(dt, dict) and "dtype" in dt:
                            base = dict(base, dtype=dt["dtype"])
                    return base
                if func.attr in DTYPE_METHODS:
                    return dict(base, dtype=DTYPE_METHODS[func.attr])
            return UNKNOWN
        name = dotted(func, self.aliases) or ""
        if name.startswith("torch.") and name[6:] in SHAPE_PRESERVING_FUNCS and node.args:
            base = self.eval(node.args[0], d)
            return base if is_tensor(base) else UNKNOWN
        if not name.startswith("torch.") or name[6:] not in TENSOR_FACTORIES:
            return UNKNOWN
        factory = name[6:]
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value, d)
                args.extend(v if isinstance(v, list) else [UNKNOWN])
            else:
                args.append(self.eval(a, d))
        kwargs = {kw.arg: self.eval(kw.value, d) for kw in node.keywords if kw.arg}
        spec = {"kind": "tensor", "factory": factory, "shape": None,
                "dtype": TENSOR_FACTORIES[factory]}
        dt = kwargs.get("dtype")
        if isinstance(dt, dict) and "dtype" in dt:
            spec["dtype"] = dt["dtype"]
        size = kwargs.get("size", UNKNOWN)
        if factory == "randint":
            if size is UNKNOWN and args:
                size = args[-1]
        elif factory == "full":
            if size is UNKNOWN and args:
                size = args[0]
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value", UNKNOWN)
            if isinstance(fill, float) and dt is None:
                spec["dtype"] = "float32"
        elif factory in ("rand", "randn", "zeros", "ones", "empty"):
            if size is UNKNOWN and args:
                size = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        elif factory.endswith("_like") and args and isinstance(args[0], dict):
            spec["shape"] = args[0].get("shape")
            spec["dtype"] = spec["dtype"] or args[0].get("dtype")
        if isinstance(size, int) and not isinstance(size, bool):
            size = [size]
        if isinstance(size, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in size):
            spec["shape"] = size
        return spec


def is_tensor(v):
    return isinstance(v, dict) and v.get("kind") == "tensor"


def assign(env, target, value):
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        vals = value if isinstance(value, list) and len(value) == len(target.elts) else None
        for i, t in enumerate(target.elts):
            assign(env, t, vals[i] if vals is not None else UNKNOWN)


def run_function(fn, aliases, module_env):
    """The evaluated items of the list a function returns, each with its source text."""
    env = dict(module_env)
    ev = Evaluator(aliases, env)
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign):
            v = ev.eval(stmt.value)
            for t in stmt.targets:
                assign(env, t, v)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            elts = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else None
            if elts is None:
                return None
            return [(ast.unparse(e)[:200], ev.eval(e)) for e in elts]
    return None


def describe_input(expr, v):
    if isinstance(v, dict) and v.get("kind") == "tensor":
        return dict(v, expr=expr)
    if v is UNKNOWN or isinstance(v, dict):
        return {"expr": expr, "kind": "unknown"}
    return {"expr": expr, "kind": "value", "value": v}


def params(fn):
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return names[1:] if names and names[0] == "self" else names


def check(source):
    out = {"ok": False, "errors": [], "warnings": [], "imports": [], "ops": [],
           "init_params": [], "forward_params": [], "init_inputs": [], "inputs": []}
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        out["errors"].append("syntax error at line %s: %s" % (e.lineno, e.msg))
        return out
    except (RecursionError, MemoryError, ValueError) as e:
        out["errors"].append("cannot parse: %s" % type(e).__name__)
        return out
    aliases, env, imports = {}, {}, []
    model = get_inputs = get_init_inputs = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                imports.append(a.name)
                if a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(stmt, ast.ImportFrom):
            mod = stmt.module or ""
            imports.append(mod)
            for a in stmt.names:
                aliases[a.asname or a.name] = mod + "." + a.name
        elif isinstance(stmt, ast.ClassDef) and stmt.name == "Model":
            model = stmt
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "get_inputs":
            get_inputs = stmt
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "get_init_inputs":
            get_init_inputs = stmt
        elif isinstance(stmt, ast.Assign):
            v = Evaluator(aliases, env).eval(stmt.value)
            for t in stmt.targets:
                assign(env, t, v)
    out["imports"] = sorted(set(imports))
    if "torch" not in {i.split(".")[0] for i in imports}:
        out["warnings"].append("does not import torch")
    if model is None:
        out["errors"].append("no class Model")
    else:
        methods = {f.name: f for f in model.body if isinstance(f, ast.FunctionDef)}
        if "forward" not in methods:
            out["errors"].append("class Model has no forward method")
        else:
            out["forward_params"] = params(methods["forward"])
        if "__init__" in methods:
            out["init_params"] = params(methods["__init__"])
        if not model.bases:
            out["warnings"].append("class Model has no base class (expected nn.Module)")
        out["ops"] = model_ops(methods, aliases)
    if get_inputs is None:
        out["errors"].append("no function get_inputs")
    if get_init_inputs is None:
        out["errors"].append("no function get_init_inputs")
    if out["errors"]:
        return out
    for fn, key, describe in ((get_inputs, "inputs", describe_input),
                              (get_init_inputs, "init_inputs", describe_input)):
        items = run_function(fn, aliases, env)
        if items is None:
            out["warnings"].append("%s does not return a list literal" % fn.name)
            continue
        out[key] = [describe(expr, v) for expr, v in items]
    out["ok"] = True
    return out


def post_order(node):
    """Nodes children first, in source order: roughly the order forward() executes them."""
    for child in ast.iter_child_nodes(node):
        yield from post_order(child)
    yield node


def model_ops(methods, aliases):
    ops = []

    def add(op):
        if op and op not in ops:
            ops.append(op)

    for fname, fn in methods.items():
        for node in post_order(fn):
            if isinstance(node, ast.Call):
                name = dotted(node.func, aliases)
                if name and name.startswith("torch."):
                    op = canonical_op(name)
                    factory = name[6:] in TENSOR_FACTORIES
                    if op and not (fname == "__init__" and factory):
                        add(op)
                elif fname != "__init__" and isinstance(node.func, ast.Attribute):
                    recv = node.func.value
                    is_self = isinstance(recv, ast.Name) and recv.id == "self"
                    is_super = (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name)
                                and recv.func.id == "super")
                    if not is_self and not is_super and node.func.attr not in NOT_TENSOR_OPS:
                        add("Tensor." + node.func.attr)
            elif isinstance(node, ast.BinOp) and fname != "__init__" and type(node.op) in BINOPS:
                add("operator." + BINOPS[type(node.op)])
    return ops


def main():
    for line in sys.stdin:
        name = None
        try:
            req = json.loads(line)
            name = req["name"]
            result = check(req["source"])
        except Exception as e:  # one bad request must not end the batch
            result = {"ok": False, "errors": ["validator: %s: %s" % (type(e).__name__, e)]}
        result["name"] = name
        try:
            text = json.dumps(result, ensure_ascii=True, allow_nan=False, default=str)
        except ValueError as e:  # a literal like 1e999 folded to inf
            text = json.dumps({"name": name, "ok": False, "errors": ["validator: %s" % e]})
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


main()
