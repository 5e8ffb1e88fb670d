"""launchers.Launcher: every way of calling a launcher wrongly gets the message it always got (the
fast path of issue 28 only detects a refusal; _refuse says what it is), and a right call passes
pointers, integers, floats and the current stream in order. Needs torch (skipped without it); the
calls that pass need a CUDA tensor (skipped without a GPU). The shared object and libcudart are
stand-ins that record what they receive."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:
    import torch
except ImportError:  # this machine has no torch: the GPU node runs these
    torch = None

if torch is not None:
    import launchers  # noqa: E402 (imports torch)

PARAMS = [
    {"name": "x", "c_type": "const float*", "kind": "pointer"},
    {"name": "y", "c_type": "float *", "kind": "pointer"},
    {"name": "buf", "c_type": "void*", "kind": "pointer"},
    {"name": "n", "c_type": "long long", "kind": "integer"},
    {"name": "alpha", "c_type": "float", "kind": "floating"},
    {"name": "stream", "c_type": "cudaStream_t", "kind": "stream"},
]


class FakeFunction:
    def __init__(self):
        self.calls = []

    def __call__(self, *values):
        self.calls.append(values)


class FakeCudart:
    def __init__(self, rc=0):
        self.rc = rc

    def cudaGetLastError(self):
        return self.rc

    def cudaGetErrorString(self, rc):
        return b"invalid configuration argument"


def launcher(rc=0, device_index=0):
    fn = FakeFunction()
    return launchers.Launcher("k", PARAMS, fn, device_index, FakeCudart(rc)), fn


@unittest.skipIf(torch is None, "no torch on this machine")
class LauncherRefusalTest(unittest.TestCase):
    def refused(self, *args, **kwargs):
        k, fn = launcher()
        with self.assertRaises(launchers.LaunchError) as e:
            k(*args, **kwargs)
        self.assertEqual(fn.calls, [])
        return str(e.exception)

    def test_messages(self):
        cpu = torch.zeros(4)
        self.assertEqual(self.refused(1, 2), "k takes 5 arguments (k(const float* x, float * y, "
                         "void* buf, long long n, float alpha)), got 2")
        self.assertEqual(self.refused(cpu, cpu, cpu, 4, 1.0, stream=0),
                         "k: keyword arguments are not supported (stream)")
        self.assertEqual(self.refused([1.0], cpu, cpu, 4, 1.0),
                         "k: parameter 'x' (const float*) takes a CUDA tensor, got list")
        self.assertEqual(self.refused(cpu.double(), cpu, cpu, 4, 1.0),
                         "k: parameter 'x' is const float* (torch.float32) but the tensor is "
                         "torch.float64")
        self.assertEqual(self.refused(cpu, cpu, cpu, 4, 1.0),
                         "k: parameter 'x' (const float*) takes a tensor on cuda:0, got cpu")

    def test_subclass_refused(self):
        class Sub(torch.Tensor):
            pass
        sub = torch.zeros(4).as_subclass(Sub)
        self.assertIn("takes a CUDA tensor, got Sub", self.refused(sub, sub, sub, 4, 1.0))

    @unittest.skipUnless(torch is not None and torch.cuda.is_available(), "no GPU")
    def test_scalars_refused_after_good_pointers(self):
        x = torch.zeros(4, device="cuda:0")
        self.assertEqual(self.refused(x, x, x, 4.0, 1.0),
                         "k: parameter 'n' (long long) takes a Python int, got float")
        self.assertEqual(self.refused(x, x, x, 4, True),
                         "k: parameter 'alpha' (float) takes a Python float, got bool")
        self.assertEqual(self.refused(x, x, x, 4, "1"),
                         "k: parameter 'alpha' (float) takes a Python float, got str")


@unittest.skipUnless(torch is not None and torch.cuda.is_available(), "no GPU")
class LauncherCallTest(unittest.TestCase):
    def test_values_in_order(self):
        k, fn = launcher()
        x = torch.zeros(4, device="cuda:0")
        y = torch.zeros(4, device="cuda:0")
        buf = torch.zeros(4, dtype=torch.int64, device="cuda:0")  # void*: any dtype
        before = launchers.launch_count()
        k(x, y, buf, 4, 2)
        self.assertEqual(launchers.launch_count(), before + 1)
        self.assertEqual(fn.calls, [(x.data_ptr(), y.data_ptr(), buf.data_ptr(), 4, 2.0,
                                     torch.cuda.current_stream().cuda_stream)])
        self.assertIsInstance(fn.calls[0][4], float)

    def test_parameter_tensor_accepted(self):
        k, fn = launcher()
        w = torch.nn.Parameter(torch.zeros(4, device="cuda:0"))
        k(w, w, w, 1, 1.0)
        self.assertEqual(len(fn.calls), 1)

    def test_launch_error_raised(self):
        k, _ = launcher(rc=9)
        x = torch.zeros(4, device="cuda:0")
        with self.assertRaises(launchers.LaunchError) as e:
            k(x, x, x, 4, 1.0)
        self.assertEqual(str(e.exception),
                         "k: launch failed: invalid configuration argument (cudaError 9)")


if __name__ == "__main__":
    unittest.main()
