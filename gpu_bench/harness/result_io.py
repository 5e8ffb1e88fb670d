"""Writing a harness child's result JSON (harness.py, filter_task.py): atomically, with inf and
nan as strings (JSON has neither)."""

import json
import math
import os


def finite(x):
    """JSON has no inf/nan: they travel as the strings "inf", "-inf", "nan"."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def write_result(path, result):
    """Writes `result` to `path` through a temporary file, so a reader never sees half of it."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(finite(result), f, indent=1, allow_nan=False)
    os.replace(tmp, path)
