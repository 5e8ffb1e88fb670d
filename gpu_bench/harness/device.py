"""The harness's own calls into the CUDA runtime (ctypes on the libcudart that torch loaded, which
is also the one the solution's shared object binds to, by soname): persisting-L2 control,
memset for poisoning, launch-error reads, versions and clocks. model_new.py never sees this.
"""

import ctypes
import os

import torch

import compare

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
POISON_CAP_BYTES = 16 << 30
CUDA_DEV_ATTR_CLOCK_RATE = 13
CUDA_DEV_ATTR_MEMORY_CLOCK_RATE = 36


def load_cudart():
    """The libcudart already mapped into this process (torch's), else one by soname."""
    path = None
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libcudart.so" in line:
                    path = line.split()[-1]
                    break
    except OSError:
        pass
    candidates = [path] if path else []
    candidates += ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
    last = None
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            last = e
    else:
        raise OSError("cannot load libcudart: %s" % last)
    lib.cudaGetLastError.restype = ctypes.c_int
    lib.cudaPeekAtLastError.restype = ctypes.c_int
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorString.argtypes = [ctypes.c_int]
    lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
    lib.cudaDeviceGetLimit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
    lib.cudaDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
    lib.cudaDriverGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]
    lib.cudaRuntimeGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]
    return lib


class Device:
    """Runtime calls on one device. Threading: the harness's main thread only."""

    def __init__(self, index):
        self.index = index
        torch.cuda.set_device(index)
        torch.cuda.init()
        self.cudart = load_cudart()
        self.props = torch.cuda.get_device_properties(index)
        self.l2_bytes = int(getattr(self.props, "L2_cache_size", 50 << 20) or (50 << 20))
        self._flush = None

    # --- L2 -------------------------------------------------------------------------------
    def disable_persisting_l2(self):
        """Persisting L2 off and every persisting line back to normal. Returns the error code."""
        rc = self.cudart.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
        rc2 = self.cudart.cudaCtxResetPersistingL2Cache()
        return rc or rc2

    def persisting_l2_limit(self):
        v = ctypes.c_size_t(0)
        rc = self.cudart.cudaDeviceGetLimit(ctypes.byref(v), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
        return int(v.value) if rc == 0 else -1

    def flush_l2(self):
        """Writes a buffer of 4x the L2 size (at least 64 MiB) on the current stream."""
        if self._flush is None:
            n = max(4 * self.l2_bytes, 64 << 20) // 4
            self._flush = torch.empty(n, dtype=torch.int32, device="cuda:%d" % self.index)
        self._flush.zero_()

    # --- poisoning ------------------------------------------------------------------------
    def poison_free_memory(self, reserve_big_block):
        """Fills every free block the caching allocator holds with 0xFF bytes (NaN in every
        floating dtype, -1 in integers), so an uninitialised torch.empty in the candidate cannot
        read what the reference left behind. With reserve_big_block, first takes most of the
        device's free memory into the allocator's cache (then it is poisoned too and new
        allocations are carved from it). Returns the number of bytes poisoned."""
        torch.cuda.synchronize()
        if reserve_big_block:
            torch.cuda.empty_cache()
            free, _ = torch.cuda.mem_get_info(self.index)
            # Capped so several harnesses can share a GPU in verify mode; larger allocations get
            # fresh device memory, which this process never wrote (nothing was freed to the
            # driver after this point).
            big = max(0, min(free - (1 << 30), int(free * 0.9), POISON_CAP_BYTES))
            if big > 0:
                try:
                    block = torch.empty(big, dtype=torch.uint8, device="cuda:%d" % self.index)
                    del block
                except torch.cuda.OutOfMemoryError:
                    pass
        poisoned = 0
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for seg in torch.cuda.memory_snapshot():
            if seg.get("device", self.index) != self.index:
                continue
            addr = seg["address"]
            for block in seg["blocks"]:
                addr = block.get("address", addr)
                if block["state"] == "inactive":
                    self.cudart.cudaMemsetAsync(ctypes.c_void_p(addr), 0xFF, block["size"], stream)
                    poisoned += block["size"]
                addr += block["size"]
        torch.cuda.synchronize()
        return poisoned

    def scrub(self, tensors):
        """Fills these tensors' storage with 0xFF bytes before they are freed, so a later
        allocation cannot find a correct result in them (a baseline's output, say)."""
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.is_cuda and t.numel():
                st = compare.untyped_storage(t)
                self.cudart.cudaMemsetAsync(ctypes.c_void_p(st.data_ptr()), 0xFF, st.nbytes(),
                                            stream)

    # --- facts for the audit record --------------------------------------------------------
    def versions(self):
        v = {
            "torch": torch.__version__,
            "cuda_runtime_torch": torch.version.cuda or "",
            "gpu_name": torch.cuda.get_device_name(self.index),
            "cc": "%d.%d" % (self.props.major, self.props.minor),
            "sm_count": self.props.multi_processor_count,
            "l2_bytes": self.l2_bytes,
            "memory_bytes": int(self.props.total_memory),
        }
        d = ctypes.c_int(0)
        if self.cudart.cudaDriverGetVersion(ctypes.byref(d)) == 0:
            v["cuda_driver_api"] = d.value
        try:
            with open("/proc/driver/nvidia/version") as f:
                first = f.readline()
            parts = [p for p in first.split() if p[:1].isdigit() and "." in p]
            v["driver"] = parts[0] if parts else first.strip()
        except OSError:
            v["driver"] = str(v.get("cuda_driver_api", ""))
        clock = ctypes.c_int(0)
        if self.cudart.cudaDeviceGetAttribute(ctypes.byref(clock), CUDA_DEV_ATTR_CLOCK_RATE,
                                              self.index) == 0:
            v["sm_clock_max_mhz"] = clock.value // 1000
        if self.cudart.cudaDeviceGetAttribute(ctypes.byref(clock),
                                              CUDA_DEV_ATTR_MEMORY_CLOCK_RATE, self.index) == 0:
            v["mem_clock_max_mhz"] = clock.value // 1000
        v.update(self.current_clocks())
        return v

    def current_clocks(self):
        """SM and memory clocks now, through NVML when it is importable (else nothing)."""
        try:
            import pynvml  # noqa: PLC0415 (optional)

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(self._nvml_index())
            return {
                "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            }
        except Exception:  # noqa: BLE001 (NVML is optional)
            return {}

    def _nvml_index(self):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        ids = [x for x in visible.split(",") if x.strip()]
        if ids and all(x.strip().isdigit() for x in ids) and self.index < len(ids):
            return int(ids[self.index])
        return self.index
