# python_args: what tlmpi_enqueue's collectives (python/tlmpi_enqueue.py) hand to the library, without
# MPI, a GPU or libtlmpi: mpi4py is replaced by a stand-in module (handles are numbers), the library's
# entry points by recorders, and arrays are CuPy-like (a stand-in "cupy" module: ndarray with data.ptr,
# size, dtype, flags, and a __cuda_array_interface__ that counts its uses), __cuda_array_interface__
# objects and torch-like tensors. Checked, per call, the arguments of the C call (pointers, count, the
# datatype / op / communicator handles, the stream):
#   - the three collectives, in place and not, every kind of array, default and explicit streams
#     (int, .ptr, __cuda_stream__, None: CuPy's current stream, the interface's "stream", torch's);
#   - nothing of an argument is reused from an earlier call: the same array object with a new pointer,
#     size or dtype, a communicator whose handle changed (freed and reused), a stream object whose
#     handle changed, each reach the library as they are now;
#   - a C-contiguous CuPy array is read without building its __cuda_array_interface__, a
#     non-contiguous one through it (and rejected with the interface's message);
#   - argument errors raise before the library is called, a nonzero return raises TlmpiError.
# Prints "python_args: PASS|FAIL: N checks, M failures"; exit 0 or 1.
import os
import sys
import types

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "python"))

# --- a stand-in mpi4py -----------------------------------------------------------------------------


class Handle(object):
    def __init__(self, f, size=None):
        self.f, self.size = f, size

    def py2f(self):
        return self.f

    def Get_size(self):
        return self.size

    def __eq__(self, other):
        return isinstance(other, Handle) and other.f == self.f

    def __hash__(self):
        return hash(self.f)


mpi = types.ModuleType("mpi4py.MPI")
for i, name in enumerate(("FLOAT", "DOUBLE", "INT8_T", "INT16_T", "INT32_T", "INT64_T", "UINT8_T", "UINT16_T",
                          "UINT32_T", "UINT64_T", "C_BOOL", "C_FLOAT_COMPLEX", "C_DOUBLE_COMPLEX")):
    setattr(mpi, name, Handle(100 + i))
mpi.DATATYPE_NULL = Handle(0)
mpi._typedict = {}
mpi.SUM, mpi.PROD, mpi.MIN, mpi.MAX = Handle(201), Handle(202), Handle(203), Handle(204)
mpi.COMM_WORLD = Handle(301, size=4)
mpi.Get_error_string = lambda code: "error %d" % code
pkg = types.ModuleType("mpi4py")
pkg.MPI = mpi
sys.modules["mpi4py"], sys.modules["mpi4py.MPI"] = pkg, mpi

# --- a stand-in CuPy -------------------------------------------------------------------------------


class Dtype(object):
    def __init__(self, name, ts):
        self.name, self.str, self.itemsize = name, ts, int(ts[2:])

    def __str__(self):
        return self.name


class Mem(object):
    def __init__(self, ptr):
        self.ptr = ptr


class Flags(object):
    def __init__(self, c):
        self.c_contiguous = c


class CpStream(object):
    def __init__(self, ptr):
        self.ptr = ptr


cp = types.ModuleType("cupy")
cp.current = CpStream(0)
cp.cuda = types.SimpleNamespace(get_current_stream=lambda: cp.current)
cai_uses = [0]


class ndarray(object):
    __slots__ = ("data", "size", "dtype", "shape", "strides", "_c")

    def __init__(self, ptr, shape, dtype, strides=None):
        self.set(ptr, shape, dtype, strides)

    def set(self, ptr, shape, dtype, strides=None):
        n = 1
        for d in shape:
            n *= d
        self.data, self.size, self.dtype, self.shape = Mem(ptr), n, dtype, tuple(shape)
        self._c = strides is None
        self.strides = strides

    @property
    def flags(self):
        return Flags(self._c)

    @property
    def __cuda_array_interface__(self):
        cai_uses[0] += 1
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3, "stream": cp.current.ptr or 1,
                "strides": None if self._c else self.strides, "data": (self.data.ptr if self.size else 0, False)}


ndarray.__module__ = "cupy"
cp.ndarray = ndarray
sys.modules["cupy"] = cp
F4, F8, I4, BE = Dtype("float32", "<f4"), Dtype("float64", "<f8"), Dtype("int32", "<i4"), Dtype(">f4", ">f4")

# --- other arrays ----------------------------------------------------------------------------------


class Cai(object):
    def __init__(self, ptr, shape, typestr, stream=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": tuple(shape), "typestr": typestr,
                                         "strides": None, "version": 3, "stream": stream}


class TorchDtype(object):
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class TorchLike(object):
    def __init__(self, ptr, n, dtype, device=0):
        self._ptr, self._n, self.dtype, self.device, self.is_cuda = ptr, n, TorchDtype(dtype), device, True

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n

    def is_contiguous(self):
        return True


TorchLike.__module__ = "torch"
torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(current_stream=lambda device: types.SimpleNamespace(cuda_stream=0x700 + device))
sys.modules["torch"] = torch

import tlmpi_enqueue as te  # noqa: E402

calls = []
ret = [0]


def recorder(name):
    def f(*args):
        calls.append((name,) + args)
        return ret[0]
    return f


class Lib(object):
    tlmpi_allreduce_enqueue_f = staticmethod(recorder("allreduce"))
    tlmpi_allgather_enqueue_f = staticmethod(recorder("allgather"))
    tlmpi_reduce_scatter_block_enqueue_f = staticmethod(recorder("reduce_scatter_block"))
    tlmpi_enqueue_prepare_f = staticmethod(recorder("prepare"))

    @staticmethod
    def tlmpi_enqueue_error():
        return b"the stub says no"


te._lib = Lib()
fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL: %s" % what)


def expect(fn, args, kwargs, want, what):
    del calls[:]
    try:
        fn(*args, **kwargs)
        got = calls[-1] if calls else "not called"
    except Exception as e:
        got = "%s%s" % (type(e).__name__, " after the call" if calls else "")
    check(got == want, "%s: %r, expected %r" % (what, got, want))


class Proto(object):
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


AR, AG, RSB = te.allreduce, te.allgather, te.reduce_scatter_block
FLOAT, DOUBLE, INT32 = 100, 101, 104
SUM, MAX, WORLD = 201, 204, 301
comm = Handle(302, size=2)
a, b = ndarray(0x1000, (8,), F4), ndarray(0x2000, (8,), F4)
st = CpStream(0x55)

# allreduce: CuPy arrays, out of place / in place, explicit and default arguments
n0 = cai_uses[0]
expect(AR, (a, b), {}, ("allreduce", 0x1000, 0x2000, 8, FLOAT, SUM, WORLD, 0), "allreduce defaults")
check(cai_uses[0] == n0, "C-contiguous CuPy arrays read without __cuda_array_interface__ (%d uses)" % (cai_uses[0] - n0))
expect(AR, (None, b, mpi.MAX, comm), {"stream": st}, ("allreduce", None, 0x2000, 8, FLOAT, MAX, 302, 0x55),
       "allreduce in place, MAX, comm, .ptr stream")
expect(AR, (b, b, "max"), {"stream": 0x66}, ("allreduce", None, 0x2000, 8, FLOAT, MAX, WORLD, 0x66),
       "allreduce sendbuf is recvbuf, op 'max', int stream")
expect(AR, (a, b), {"stream": Proto(0x77)}, ("allreduce", 0x1000, 0x2000, 8, FLOAT, SUM, WORLD, 0x77),
       "allreduce __cuda_stream__")
cp.current = CpStream(0x88)
expect(AR, (a, b), {}, ("allreduce", 0x1000, 0x2000, 8, FLOAT, SUM, WORLD, 0x88), "allreduce CuPy's current stream")
cp.current = CpStream(0)
# nothing reused: the same objects with new pointers, sizes, dtypes; a communicator with a new handle
a.set(0x3000, (2, 3), F8)
b.set(0x4000, (6,), F8)
expect(AR, (a, b), {}, ("allreduce", 0x3000, 0x4000, 6, DOUBLE, SUM, WORLD, 0), "allreduce after the arrays changed")
comm.f = 310
expect(AR, (a, b, None, comm), {}, ("allreduce", 0x3000, 0x4000, 6, DOUBLE, SUM, 310, 0),
       "allreduce after the communicator's handle changed")
st.ptr = 0x56
expect(AR, (a, b), {"stream": st}, ("allreduce", 0x3000, 0x4000, 6, DOUBLE, SUM, WORLD, 0x56),
       "allreduce after the stream's handle changed")
e = ndarray(0x5000, (0,), F8)
expect(AR, (None, e), {}, ("allreduce", None, 0, 0, DOUBLE, SUM, WORLD, 0), "allreduce of an empty array (pointer 0)")
# errors before the call, and after it
expect(AR, (ndarray(0x1000, (5,), F8), b), {}, "ValueError", "allreduce count mismatch")
expect(AR, (ndarray(0x1000, (6,), I4), b), {}, "TypeError", "allreduce type mismatch")
expect(AR, (None, ndarray(0x1000, (6,), BE)), {}, "TypeError", "allreduce big-endian")
nc = ndarray(0x1000, (2, 3), F4, strides=(4, 8))
n0 = cai_uses[0]
expect(AR, (None, nc), {}, "ValueError", "allreduce non-contiguous CuPy array")
check(cai_uses[0] == n0 + 1, "a non-contiguous CuPy array goes through __cuda_array_interface__")
expect(AR, (None, ndarray(0x1000, (1, 3), F4, strides=(64, 4))), {},
       ("allreduce", None, 0x1000, 3, FLOAT, SUM, WORLD, 0), "CuPy array, not flagged contiguous, C-contiguous strides")
expect(AR, (None, bytearray(8)), {}, "TypeError", "allreduce host object")
expect(AR, (None, b), {"stream": "s"}, "TypeError", "allreduce not a stream")
ret[0] = 12
expect(AR, (a, b), {}, "TlmpiError after the call", "allreduce nonzero return")
try:
    AR(a, b)
except te.TlmpiError as err:
    check(err.code == 12 and "the stub says no" in str(err), "TlmpiError code and reason: %s" % err)
ret[0] = 0

# __cuda_array_interface__ objects and torch-like tensors
x, y = Cai(0x6000, (4,), "<i4", stream=2), Cai(0x7000, (4,), "<i4")
expect(AR, (x, y, "sum"), {}, ("allreduce", 0x6000, 0x7000, 4, INT32, SUM, WORLD, 0), "CAI, recvbuf's stream (none)")
expect(AR, (y, x), {}, ("allreduce", 0x7000, 0x6000, 4, INT32, SUM, WORLD, 2), "CAI, recvbuf's stream 2")
x.__cuda_array_interface__["data"] = (0x6100, False)
x.__cuda_array_interface__["stream"] = 0x900
expect(AR, (y, x), {}, ("allreduce", 0x7000, 0x6100, 4, INT32, SUM, WORLD, 0x900), "CAI after its pointer changed")
x.__cuda_array_interface__["data"] = (0x6100, True)
expect(AR, (y, x), {}, "ValueError", "CAI read-only recvbuf")
t, u = TorchLike(0x8000, 10, "float32", device=1), TorchLike(0x9000, 10, "float32", device=1)
expect(AR, (t, u), {}, ("allreduce", 0x8000, 0x9000, 10, FLOAT, SUM, WORLD, 0x701), "torch, current stream")
expect(AR, (ndarray(0x1000, (10,), F4), u), {}, ("allreduce", 0x1000, 0x9000, 10, FLOAT, SUM, WORLD, 0x701),
       "CuPy sendbuf, torch recvbuf: the recvbuf's stream")

# allgather and reduce_scatter_block
a.set(0x1000, (3,), F4)
b.set(0x2000, (12,), F4)
expect(AG, (a, b), {}, ("allgather", 0x1000, 0x2000, 3, FLOAT, WORLD, 0), "allgather, 4 ranks")
expect(AG, (None, b, comm), {"stream": 9}, ("allgather", None, 0x2000, 6, FLOAT, 310, 9), "allgather in place, 2 ranks")
expect(AG, (a, b, comm), {}, "ValueError", "allgather recvbuf size")
expect(AG, (None, ndarray(0x1000, (7,), F4), comm), {}, "ValueError", "allgather in place, indivisible")
expect(RSB, (b, a), {}, ("reduce_scatter_block", 0x2000, 0x1000, 3, FLOAT, SUM, WORLD, 0), "reduce_scatter_block")
expect(RSB, (None, b, "min", comm), {}, ("reduce_scatter_block", None, 0x2000, 6, FLOAT, 203, 310, 0),
       "reduce_scatter_block in place, MIN")
expect(RSB, (b, a, None, comm), {}, "ValueError", "reduce_scatter_block sendbuf size")
expect(RSB, (ndarray(0x1000, (12,), I4), a), {}, "TypeError", "reduce_scatter_block type mismatch")
ret[0] = 5
expect(AG, (a, b), {}, "TlmpiError after the call", "allgather nonzero return")
expect(RSB, (b, a), {}, "TlmpiError after the call", "reduce_scatter_block nonzero return")
ret[0] = 0

print("python_args: %s: %d checks, %d failures" % ("PASS" if fails == 0 else "FAIL", checks, fails))
sys.exit(1 if fails else 0)
