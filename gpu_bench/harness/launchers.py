"""The `kernels` module model_new.py imports (DESIGN.md section 4), built with ctypes from the
launcher prototypes the compile farm extracted.

Each launcher checks its arguments before calling into the shared object: a pointer parameter
takes a torch.Tensor (exactly, no subclass) on the harness's GPU whose dtype matches the pointee;
an integer parameter takes a Python int; a floating parameter a Python int or float; the trailing
cudaStream_t is not passed by the caller and is filled with the current stream. Contiguity is not
checked: the layout is the agent's responsibility. After the call the launch error (if any) is
read with cudaGetLastError and raised as a LaunchError naming the launcher.

A launcher call sits inside every candidate forward, so it is kept cheap (issue 28): the
parameters are sorted by kind once, a call makes each test once and builds no message (a refused
call is explained on the slow path, `_refuse`, with the messages it always had), and the current
stream is read as a raw handle (torch._C._cuda_getCurrentRawStream) instead of through a new
torch.cuda.Stream object per call. scripts/gpu/timing_agreement.py measures what is left.
"""

import ctypes
import types

import torch

# Pointee C type (const, volatile and whitespace removed) -> torch dtype.
POINTEE_DTYPES = {
    "float": torch.float32,
    "__half": torch.float16,
    "half": torch.float16,
    "__nv_bfloat16": torch.bfloat16,
    "nv_bfloat16": torch.bfloat16,
    "double": torch.float64,
    "int": torch.int32,
    "int32_t": torch.int32,
    "unsignedint": torch.int32,
    "uint32_t": torch.int32,
    "int64_t": torch.int64,
    "longlong": torch.int64,
    "long": torch.int64,
    "longlongint": torch.int64,
    "uint64_t": torch.int64,
    "unsignedlonglong": torch.int64,
    "size_t": torch.int64,
    "uint8_t": torch.uint8,
    "unsignedchar": torch.uint8,
    "int8_t": torch.int8,
    "signedchar": torch.int8,
    "char": torch.int8,
    "int16_t": torch.int16,
    "short": torch.int16,
    "bool": torch.bool,
}

# Integer / floating C type -> ctypes type.
INTEGER_CTYPES = {
    "int": ctypes.c_int,
    "int32_t": ctypes.c_int32,
    "unsignedint": ctypes.c_uint,
    "unsigned": ctypes.c_uint,
    "uint32_t": ctypes.c_uint32,
    "long": ctypes.c_long,
    "longlong": ctypes.c_longlong,
    "longlongint": ctypes.c_longlong,
    "int64_t": ctypes.c_int64,
    "unsignedlong": ctypes.c_ulong,
    "unsignedlonglong": ctypes.c_ulonglong,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "ptrdiff_t": ctypes.c_ssize_t,
    "short": ctypes.c_short,
    "int16_t": ctypes.c_int16,
    "char": ctypes.c_char,
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "unsignedchar": ctypes.c_ubyte,
    "bool": ctypes.c_bool,
}
FLOATING_CTYPES = {"float": ctypes.c_float, "double": ctypes.c_double}


_LAUNCHES = [0]


def launch_count():
    """How many launcher calls reached the shared object so far (the harness reads it around a
    forward to see that the solution launched something)."""
    return _LAUNCHES[0]


class LaunchError(Exception):
    """A launcher was called wrongly, or its launch failed. The message names the launcher."""


def _squash(c_type):
    t = c_type.replace("const", " ").replace("volatile", " ").replace("__restrict__", " ")
    t = t.replace("restrict", " ").replace("struct", " ")
    return "".join(t.split())


def pointee_dtype(c_type):
    """torch dtype of a pointer parameter's pointee, None for void* (any dtype)."""
    base = _squash(c_type).rstrip("*")
    if base == "void":
        return None
    if base not in POINTEE_DTYPES:
        raise LaunchError("unsupported pointer type '%s'" % c_type)
    return POINTEE_DTYPES[base]


def _raw_stream_reader():
    """device index -> the current stream's cudaStream_t as an int."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


_TENSOR = torch.Tensor
_PARAMETER = torch.nn.Parameter


class Launcher:
    """One extern "C" launcher; calling it checks the arguments and launches."""

    def __init__(self, name, params, function, device_index, cudart):
        self.name = name
        self._function = function
        self._device_index = device_index
        self._cudart = cudart
        self._args = []  # (param name, kind, c_type, dtype or ctype)
        self._pointers = []  # (position, dtype or None)
        self._integers = []  # positions
        self._floats = []  # positions
        argtypes = []
        for i, p in enumerate(params):
            pname = p.get("name") or ("arg%d" % i)
            kind = p["kind"]
            c_type = p["c_type"]
            if kind == "pointer":
                self._pointers.append((i, pointee_dtype(c_type)))
                self._args.append((pname, kind, c_type, self._pointers[-1][1]))
                argtypes.append(ctypes.c_void_p)
            elif kind == "integer":
                ct = INTEGER_CTYPES.get(_squash(c_type))
                if ct is None:
                    raise LaunchError("%s: unsupported integer type '%s' of '%s'"
                                      % (name, c_type, pname))
                self._integers.append(i)
                self._args.append((pname, kind, c_type, ct))
                argtypes.append(ct)
            elif kind == "floating":
                ct = FLOATING_CTYPES.get(_squash(c_type))
                if ct is None:
                    raise LaunchError("%s: unsupported floating type '%s' of '%s'"
                                      % (name, c_type, pname))
                self._floats.append(i)
                self._args.append((pname, kind, c_type, ct))
                argtypes.append(ct)
            elif kind == "stream":
                if i != len(params) - 1:
                    raise LaunchError("%s: cudaStream_t must be the last parameter" % name)
                argtypes.append(ctypes.c_void_p)
            else:
                raise LaunchError("%s: parameter '%s' of unknown kind '%s'" % (name, pname, kind))
        self._arity = len(self._args)
        self._has_stream = bool(params) and params[-1]["kind"] == "stream"
        self._stream = _raw_stream_reader()
        function.argtypes = argtypes
        function.restype = None

    def signature(self):
        return "%s(%s)" % (self.name, ", ".join("%s %s" % (a[2], a[0]) for a in self._args))

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._arity:
            self._refuse(args, kwargs)
        values = list(args)
        index = self._device_index
        for i, want in self._pointers:
            t = args[i]
            cls = type(t)
            if ((cls is not _TENSOR and cls is not _PARAMETER)
                    or (want is not None and t.dtype != want)
                    or not t.is_cuda or t.get_device() != index):
                self._refuse(args, kwargs)
            values[i] = t.data_ptr()
        for i in self._integers:
            if not isinstance(args[i], int):
                self._refuse(args, kwargs)
        for i in self._floats:
            v = args[i]
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                self._refuse(args, kwargs)
            values[i] = float(v)
        if self._has_stream:
            values.append(self._stream(index))
        _LAUNCHES[0] += 1
        self._function(*values)
        rc = self._cudart.cudaGetLastError()
        if rc != 0:
            msg = self._cudart.cudaGetErrorString(rc)
            raise LaunchError("%s: launch failed: %s (cudaError %d)"
                              % (self.name, msg.decode() if msg else "?", rc))

    def _refuse(self, args, kwargs):
        """Raises the LaunchError that says what is wrong with this call (the slow path)."""
        if kwargs:
            raise LaunchError("%s: keyword arguments are not supported (%s)"
                              % (self.name, ", ".join(kwargs)))
        if len(args) != len(self._args):
            raise LaunchError("%s takes %d arguments (%s), got %d"
                              % (self.name, len(self._args), self.signature(), len(args)))
        for (pname, kind, c_type, want), value in zip(self._args, args):
            if kind == "pointer":
                if type(value) is not _TENSOR and type(value) is not _PARAMETER:
                    raise LaunchError("%s: parameter '%s' (%s) takes a CUDA tensor, got %s"
                                      % (self.name, pname, c_type, type(value).__name__))
                if want is not None and value.dtype != want:
                    raise LaunchError("%s: parameter '%s' is %s (torch.%s) but the tensor is %s"
                                      % (self.name, pname, c_type, str(want).split(".")[-1],
                                         value.dtype))
                if not value.is_cuda or value.device.index != self._device_index:
                    raise LaunchError("%s: parameter '%s' (%s) takes a tensor on cuda:%d, got %s"
                                      % (self.name, pname, c_type, self._device_index,
                                         value.device))
            elif kind == "integer":
                if not isinstance(value, int):
                    raise LaunchError("%s: parameter '%s' (%s) takes a Python int, got %s"
                                      % (self.name, pname, c_type, type(value).__name__))
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                raise LaunchError("%s: parameter '%s' (%s) takes a Python float, got %s"
                                  % (self.name, pname, c_type, type(value).__name__))
        raise LaunchError("%s: arguments refused" % self.name)  # the fast path and this disagree


def build_module(library_path, prototypes, device_index, cudart):
    """The `kernels` module: one Launcher attribute per prototype. Raises OSError when the shared
    object cannot be loaded and LaunchError when a prototype is unusable."""
    lib = ctypes.CDLL(library_path, mode=ctypes.RTLD_LOCAL)
    module = types.ModuleType("kernels", "launchers of the solution's shared object")
    for proto in prototypes:
        function = getattr(lib, proto["name"])
        setattr(module, proto["name"], Launcher(proto["name"], proto["params"], function,
                                                device_index, cudart))
    return module
