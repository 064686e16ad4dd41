# python_fast: tlmpi_enqueue's optional C extension (python/_tlmpi_fast.c) against its Python path,
# without MPI, a GPU or libtlmpi. mpi4py, CuPy and torch are stand-in modules (tests/unit/py_standins.py,
# shared with python_args; handles are numbers;
# CuPy-like ndarrays, torch-like tensors, objects exposing __cuda_array_interface__, stream objects of
# each kind), the library's three entry points are ctypes callbacks that record what they are called
# with (the same C functions for both paths: the Python path calls them through ctypes, the extension
# through their addresses). Each case (the three collectives, in place and not, every kind of array
# and stream, the module's argument errors, a nonzero return) runs through the Python path alone
# (what TLMPI_PY_FAST=0 gives) and through the extension; checked:
#   - the outcomes are the same: the entry called with the same arguments, or the same exception
#     (type and message), raised before or after the call alike;
#   - the extension made every call the Python path made (its .calls count), but for the cases
#     marked as the Python path's (types the module does not cache a reading for);
#   - a C-contiguous CuPy array is read without building its __cuda_array_interface__;
#   - entry points that are not C functions (Python callables) leave every call to the Python path,
#     and a new _fns tuple is taken up by the next call;
#   - TLMPI_PY_FAST=0 in the environment keeps the extension out (a second python);
#   - no references are leaked over many calls (sys.getallocatedblocks).
# The extension is python/_tlmpi_fast<EXT_SUFFIX> of the build tree ($top_builddir/python, put on
# sys.path after the source tree's python/). Prints "python_fast: PASS|FAIL: N checks, M failures";
# exit 0 or 1; when the module could not load the extension (with why): 1 under PYTHON_FAST_EXPECT=1
# (python_fast.sh: the build has it for this Python), else 77.
import ctypes
import os
import re
import subprocess
import sys
import types

src = os.path.join(os.environ.get("top_srcdir", "."), "python")
build = os.path.join(os.environ.get("top_builddir", "."), "python")
sys.path.insert(0, src)
sys.path.insert(1, build)

sys.path.insert(2, os.path.join(os.environ.get("top_srcdir", "."), "tests", "unit"))
from py_standins import (B1, BE, C8, F4, F8, I4, Cai, CpStream, Handle, TorchDtype, TorchLike,  # noqa: E402
                         cai_uses, cp, mpi, ndarray)

# --- other arrays and streams ----------------------------------------------------------------------


class NumbaLike(Cai):
    pass


NumbaLike.__module__ = "numba.cuda.cudadrv.devicearray"


class TorchInstanceAttr(object):
    """torch-like, data_ptr an attribute of the instance: the module decides its reading per call"""

    def __init__(self, ptr, n):
        self.data_ptr, self._n, self.dtype, self.device, self.is_cuda = (lambda: ptr), n, TorchDtype("float32"), 0, True

    def numel(self):
        return self._n

    def is_contiguous(self):
        return True


TorchInstanceAttr.__module__ = "torch"


class Proto(object):
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


class TorchStream(object):
    def __init__(self, h):
        self.cuda_stream = h


class NumbaStream(object):
    def __init__(self, h):
        self.handle = h


class Raises(object):
    """an array whose __cuda_array_interface__ raises"""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("this interface is broken")


import tlmpi_enqueue as te  # noqa: E402

if te._fast is None:  # python_fast.sh found the extension built for this Python: not loading it fails
    expected = os.environ.get("PYTHON_FAST_EXPECT") == "1"
    print("python_fast: %s: tlmpi_enqueue did not load the extension from %s (%s)"
          % ("FAIL" if expected else "SKIP", build, te._fast_why))
    sys.exit(1 if expected else 77)
fast = te._fast

# --- the stub library: ctypes callbacks that record their arguments ----------------------------------

calls = []
ret = [0]
vp, i64, fint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
OP_T = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, i64, fint, fint, fint, vp)
NOP_T = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, i64, fint, fint, vp)


def recorder(name):
    def f(*args):
        calls.append((name,) + args)
        return ret[0]
    return f


class Lib(object):
    def __init__(self, tag=""):
        self.tlmpi_allreduce_enqueue_f = OP_T(recorder(tag + "allreduce"))
        self.tlmpi_allgather_enqueue_f = NOP_T(recorder(tag + "allgather"))
        self.tlmpi_reduce_scatter_block_enqueue_f = OP_T(recorder(tag + "reduce_scatter_block"))

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
    return cond


def run(case, on):
    """case() -> (fn, args, kwargs, rc); its outcome with the extension on or off: the calls recorded
    and the exception, if any (type and message)"""
    fn, args, kwargs, rc = case()
    te._fast_use(on)
    del calls[:]
    ret[0] = rc
    try:
        fn(*args, **kwargs)
        err = None
    except Exception as e:  # an object's repr in the message: its address left out
        err = "%s: %s" % (type(e).__name__, re.sub(" at 0x[0-9a-f]+>", ">", str(e)))
    finally:
        te._fast_use(True)
        ret[0] = 0
    return (tuple(calls), err)


def same(name, case, py_only=False):
    """case through the Python path and through the extension: the same outcome; the extension made
    the call where the Python path made one (unless py_only)"""
    want = run(case, False)
    c0 = fast.calls
    got = run(case, True)
    took = fast.calls - c0
    check(got == want, "%s: extension %r, Python path %r" % (name, got, want))
    if want[0] and not py_only:
        check(took == 1, "%s: the extension made %d calls, expected 1 (it passed the call to Python)" % (name, took))
    if not want[0] or py_only:
        check(took == 0, "%s: the extension made %d calls, expected 0 (Python's call)" % (name, took))
    return want


AR, AG, RSB = te.allreduce, te.allgather, te.reduce_scatter_block
comm = Handle(302, size=2)
st = CpStream(0x55)


def A(*shape, **kw):
    return ndarray(kw.get("ptr", 0x1000), shape, kw.get("dtype", F4), kw.get("strides"))


def case(fn, *args, **kwargs):
    rc = kwargs.pop("_rc", 0)
    return lambda: (fn, args, kwargs, rc)


def lazy(make, rc=0):
    """a case whose arguments are made when it runs (make() -> (fn, args, kwargs))"""
    def c():
        fn, args, kwargs = make()
        return fn, args, kwargs, rc
    return c


def with_current(ptr, make):
    """make()'s case with CuPy's current stream ptr while it runs"""
    def c():
        cp.current = CpStream(ptr)
        fn, args, kwargs = make()
        return fn, args, kwargs, 0
    return c


def cai(*a, **kw):
    return lambda: Cai(*a, **kw)


# --- the cases ---------------------------------------------------------------------------------------

# allreduce on CuPy arrays: defaults, in place, every way of naming op, communicator and stream
same("allreduce defaults", lazy(lambda: (AR, (A(8, ptr=0x1000), A(8, ptr=0x2000)), {})))
same("allreduce in place, MAX, comm, .ptr stream",
     lazy(lambda: (AR, (None, A(8, ptr=0x2000), mpi.MAX, comm), {"stream": st})))
b = A(8, ptr=0x2000)
same("allreduce sendbuf is recvbuf, 'max', int stream", case(AR, b, b, "max", stream=0x66))
same("allreduce op 'Prod', 'sum', 'MIN'", lazy(lambda: (AR, (None, A(8), "Prod"), {})))
same("allreduce op 'sum'", lazy(lambda: (AR, (None, A(8), "sum"), {})))
same("allreduce op MPI.MIN", lazy(lambda: (AR, (None, A(8), mpi.MIN), {})))
same("allreduce unknown op name", lazy(lambda: (AR, (None, A(8), "bogus"), {})))
same("allreduce op without py2f", lazy(lambda: (AR, (None, A(8), 7), {})))
same("allreduce comm without py2f", lazy(lambda: (AR, (None, A(8), None, "world"), {})))
same("allreduce __cuda_stream__", lazy(lambda: (AR, (A(8), A(8, ptr=0x2000)), {"stream": Proto(0x77)})))
same("allreduce .cuda_stream", lazy(lambda: (AR, (A(8), A(8, ptr=0x2000)), {"stream": TorchStream(0x78)})))
same("allreduce .handle c_void_p", lazy(lambda: (AR, (None, A(8)), {"stream": NumbaStream(ctypes.c_void_p(0x79))})))
same("allreduce .handle c_void_p(None)", lazy(lambda: (AR, (None, A(8)), {"stream": NumbaStream(ctypes.c_void_p())})))
same("allreduce .handle int", lazy(lambda: (AR, (None, A(8)), {"stream": NumbaStream(0x7a)})))
same("allreduce .handle None", lazy(lambda: (AR, (None, A(8)), {"stream": NumbaStream(None)})))
same("allreduce stream True", lazy(lambda: (AR, (None, A(8)), {"stream": True})))
same("allreduce stream -1", lazy(lambda: (AR, (None, A(8)), {"stream": -1})))
same("allreduce stream 2**64 + 5", lazy(lambda: (AR, (None, A(8)), {"stream": 2 ** 64 + 5})))
same("allreduce stream 's'", lazy(lambda: (AR, (None, A(8)), {"stream": "s"})))
same("allreduce stream 1.5", lazy(lambda: (AR, (None, A(8)), {"stream": 1.5})))
same("allreduce CuPy's current stream", with_current(0x88, lambda: (AR, (A(8), A(8, ptr=0x2000)), {})))
same("allreduce CuPy's null stream", with_current(0, lambda: (AR, (A(8), A(8, ptr=0x2000)), {})))
same("allreduce float64 (2, 3)", lazy(lambda: (AR, (A(2, 3, dtype=F8), A(6, dtype=F8, ptr=0x4000)), {})))
same("allreduce comm 310", lazy(lambda: (AR, (None, A(6, dtype=F8), None, Handle(310, 2)), {})))
same("allreduce complex64, bool", lazy(lambda: (AR, (A(4, dtype=C8), A(4, dtype=C8, ptr=0x9)), {})))
same("allreduce bool", lazy(lambda: (AR, (None, A(4, dtype=B1)), {})))
same("allreduce empty CuPy array", lazy(lambda: (AR, (None, A(0, dtype=F8, ptr=0x5000)), {})))
same("allreduce count mismatch", lazy(lambda: (AR, (A(5, dtype=F8), A(6, dtype=F8)), {})))
same("allreduce type mismatch", lazy(lambda: (AR, (A(6, dtype=I4), A(6)), {})))
same("allreduce big-endian", lazy(lambda: (AR, (None, A(6, dtype=BE)), {})))
n0 = cai_uses[0]
same("allreduce non-contiguous CuPy array", lazy(lambda: (AR, (None, A(2, 3, strides=(4, 8))), {})))
same("allreduce CuPy, not flagged contiguous, C-contiguous strides",
     lazy(lambda: (AR, (None, A(1, 3, strides=(64, 4))), {})))
n0 = cai_uses[0]
run(lazy(lambda: (AR, (A(8), A(8, ptr=0x2000)), {})), True)
check(cai_uses[0] == n0, "the extension read C-contiguous CuPy arrays through __cuda_array_interface__ (%d uses)"
      % (cai_uses[0] - n0))
same("allreduce host object", lazy(lambda: (AR, (None, bytearray(8)), {})))
same("allreduce None recvbuf", lazy(lambda: (AR, (None, None), {})))
same("allreduce raising interface", lazy(lambda: (AR, (None, Raises()), {})))
same("allreduce nonzero return", lazy(lambda: (AR, (A(8), A(8, ptr=0x2000)), {}), rc=12))
same("allreduce nonzero return, in place", lazy(lambda: (AR, (None, A(8)), {}), rc=5))

# __cuda_array_interface__ objects: its stream entry, data, shape, strides, typestr, mask
same("CAI, stream None", lazy(lambda: (AR, (Cai(0x6000, (4,), "<i4", 2), Cai(0x7000, (4,), "<i4")), {})))
same("CAI, stream 2", lazy(lambda: (AR, (Cai(0x7000, (4,), "<i4"), Cai(0x6000, (4,), "<i4", 2)), {})))
same("CAI, stream 1 (legacy)", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", 1)), {})))
same("CAI, stream 0x900", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", 0x900)), {})))
same("CAI, stream 0", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", 0)), {})))
same("CAI, stream '3'", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", "3")), {})))
same("CAI, stream 2.5", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", 2.5)), {})))
same("CAI, stream 'x'", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", "x")), {})))
same("CAI, no stream entry", lazy(lambda: (AR, (None, NumbaLike(0x6000, (4,), "<f4")), {})))
same("CAI, explicit stream over the entry", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", 2)), {"stream": 0x31})))
same("CAI read-only recvbuf", lazy(lambda: (AR, (Cai(0x7000, (4,), "<i4"), Cai(0x6000, (4,), "<i4", readonly=True)),
                                           {})))
same("CAI read-only sendbuf", lazy(lambda: (AR, (Cai(0x7000, (4,), "<i4", readonly=True), Cai(0x6000, (4,), "<i4")),
                                           {})))
same("CAI readonly 0/1", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<i4", readonly=1)), {})))
same("CAI data None", lazy(lambda: (AR, (None, Cai(None, (0,), "<f4")), {})))
same("CAI data list", lazy(lambda: (AR, (None, NumbaLike(0x6000, (4,), "<f4", data=[0x6100, False])), {})))
same("CAI pointer 2**64 + 16", lazy(lambda: (AR, (None, Cai(2 ** 64 + 16, (4,), "<f4")), {})))
same("CAI pointer -16", lazy(lambda: (AR, (None, Cai(-16, (4,), "<f4")), {})))
same("CAI shape list", lazy(lambda: (AR, (None, Cai(0x6000, [2, 3], "<f4")), {})))
same("CAI shape ()", lazy(lambda: (AR, (None, Cai(0x6000, (), "<f4")), {})))
same("CAI shape negative", lazy(lambda: (AR, (None, Cai(0x6000, (-3,), "<f4")), {})), py_only=True)
same("CAI shape float", lazy(lambda: (AR, (None, Cai(0x6000, (2.0,), "<f4")), {})))
same("CAI shape 2**40 x 2**40", lazy(lambda: (AR, (None, Cai(0x6000, (2 ** 40, 2 ** 40), "<f4")), {})), py_only=True)
same("CAI strides C-contiguous", lazy(lambda: (AR, (None, Cai(0x6000, (2, 3), "<f4", strides=(12, 4))), {})))
same("CAI strides transposed", lazy(lambda: (AR, (None, Cai(0x6000, (2, 3), "<f4", strides=(4, 8))), {})))
same("CAI strides, unit dimension", lazy(lambda: (AR, (None, Cai(0x6000, (1, 3), "<f4", strides=(999, 4))), {})))
same("CAI strides padded rows", lazy(lambda: (AR, (None, Cai(0x6000, (2, 3), "<f4", strides=(16, 4))), {})))
same("CAI strides one element", lazy(lambda: (AR, (None, Cai(0x6000, (1,), "<f4", strides=(7,))), {})))
same("CAI strides shorter than shape", lazy(lambda: (AR, (None, Cai(0x6000, (2, 3), "<f4", strides=(4,))), {})))
same("CAI strides float", lazy(lambda: (AR, (None, Cai(0x6000, (2, 3), "<f4", strides=(12.0, 4))), {})),
     py_only=True)
same("CAI mask", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", mask=object())), {})))
same("CAI mask None", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f4", mask=None)), {})))
same("CAI typestr float64", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f8")), {})))
same("CAI typestr no MPI type", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<x9")), {})))
same("CAI typestr float16 (tlmpi's own type)", lazy(lambda: (AR, (None, Cai(0x6000, (4,), "<f2")), {})))
same("CAI typestr big-endian", lazy(lambda: (AR, (None, Cai(0x6000, (4,), ">i4")), {})))
same("CAI typestr not a str", lazy(lambda: (AR, (None, Cai(0x6000, (4,), F4)), {})), py_only=True)
same("CAI numba stream entry, numba origin", lazy(lambda: (AR, (None, NumbaLike(0x6000, (4,), "<f4", 0x44)), {})))
same("CAI interface not a dict", lazy(lambda: (AR, (None, types.SimpleNamespace(__cuda_array_interface__=None)), {})))

# torch-like tensors
same("torch, current stream", lazy(lambda: (AR, (TorchLike(0x8000, 10, "float32", 1),
                                                 TorchLike(0x9000, 10, "float32", 1)), {})))
same("torch, explicit stream", lazy(lambda: (AR, (None, TorchLike(0x9000, 10, "float64")),
                                             {"stream": TorchStream(0x123)})))
same("CuPy sendbuf, torch recvbuf: the recvbuf's stream", lazy(lambda: (AR, (A(10), TorchLike(0x9000, 10, "float32")),
                                                                        {})))
same("torch sendbuf, CuPy recvbuf", with_current(0x99, lambda: (AR, (TorchLike(0x9000, 10, "float32"), A(10)), {})))
same("torch CPU tensor", lazy(lambda: (AR, (None, TorchLike(0x9000, 10, "float32", cuda=False)), {})))
same("torch non-contiguous", lazy(lambda: (AR, (None, TorchLike(0x9000, 10, "float32", contiguous=False)), {})))
same("torch unsupported dtype", lazy(lambda: (AR, (None, TorchLike(0x9000, 10, "qint8")), {})))
same("torch bfloat16", lazy(lambda: (AR, (None, TorchLike(0x9000, 10, "bfloat16")), {})))
same("torch int64 vs float32", lazy(lambda: (AR, (TorchLike(0x8000, 10, "int64"), TorchLike(0x9000, 10, "float32")),
                                             {})))
same("torch data_ptr an instance attribute", lazy(lambda: (AR, (None, TorchInstanceAttr(0x9100, 4)), {})),
     py_only=True)

# allgather and reduce_scatter_block: counts against the communicator's size, in place and not
same("allgather, 4 ranks", lazy(lambda: (AG, (A(3), A(12, ptr=0x2000)), {})))
same("allgather in place, 2 ranks, int stream", lazy(lambda: (AG, (None, A(12, ptr=0x2000), comm), {"stream": 9})))
same("allgather in place, 4 ranks, CuPy's stream", with_current(0x42, lambda: (AG, (None, A(12, ptr=0x2000)), {})))
same("allgather sendbuf is recvbuf", lazy(lambda: (AG, (b, b), {})))
same("allgather recvbuf size", lazy(lambda: (AG, (A(3), A(12, ptr=0x2000), comm), {})))
same("allgather in place, indivisible", lazy(lambda: (AG, (None, A(7), comm), {})))
same("allgather type mismatch", lazy(lambda: (AG, (A(3, dtype=I4), A(12)), {})))
same("allgather CAI, stream entry", lazy(lambda: (AG, (Cai(0x6000, (2,), "<f8"), Cai(0x7000, (8,), "<f8", 0x51)), {})))
same("allgather torch", lazy(lambda: (AG, (None, TorchLike(0x9000, 8, "int32", 2), comm), {})))
same("allgather communicator of size 0", lazy(lambda: (AG, (None, A(8), Handle(303, 0)), {})))
same("allgather communicator of size 0, not in place", lazy(lambda: (AG, (A(0), A(0), Handle(303, 0)), {})),
     py_only=True)
same("allgather communicator without Get_size", lazy(lambda: (AG, (None, A(8), mpi.SUM), {})))
same("allgather communicator size '2'", lazy(lambda: (AG, (None, A(8), Handle(304, "2")), {})))
same("allgather empty", lazy(lambda: (AG, (None, A(0)), {})))
same("allgather nonzero return", lazy(lambda: (AG, (A(3), A(12, ptr=0x2000)), {}), rc=5))
same("reduce_scatter_block", lazy(lambda: (RSB, (A(12, ptr=0x2000), A(3)), {})))
same("reduce_scatter_block in place, MIN, comm", lazy(lambda: (RSB, (None, A(12, ptr=0x2000), "min", comm), {})))
same("reduce_scatter_block in place, indivisible", lazy(lambda: (RSB, (None, A(13), "min", comm), {})))
same("reduce_scatter_block sendbuf size", lazy(lambda: (RSB, (A(12, ptr=0x2000), A(3), None, comm), {})))
same("reduce_scatter_block type mismatch", lazy(lambda: (RSB, (A(12, dtype=I4), A(3)), {})))
same("reduce_scatter_block sendbuf is recvbuf", lazy(lambda: (RSB, (b, b), {})))
same("reduce_scatter_block CAI", lazy(lambda: (RSB, (Cai(0x6000, (8,), "<i8"), Cai(0x7000, (2,), "<i8", 0x52)), {})))
same("reduce_scatter_block torch, explicit stream", lazy(lambda: (RSB, (TorchLike(0x8000, 8, "float32"),
                                                                        TorchLike(0x9000, 4, "float32"), "max", comm),
                                                                 {"stream": Proto(0x53)})))
same("reduce_scatter_block nonzero return", lazy(lambda: (RSB, (A(12, ptr=0x2000), A(3)), {}), rc=7))
same("reduce_scatter_block MPI.COMM_WORLD of size 1", lazy(lambda: (RSB, (None, A(5), None, Handle(305, 1)), {})))

# a TlmpiError raised by the extension's call is the module's: code and reason
te._fast_use(True)
ret[0] = 12
try:
    AR(A(8), A(8, ptr=0x2000))
    check(False, "a nonzero return raised nothing")
except te.TlmpiError as err:
    check(err.code == 12 and "the stub says no" in str(err) and err.call == "tlmpi_allreduce_enqueue_f",
          "TlmpiError code, call and reason: %s" % err)
ret[0] = 0

# entry points that are not C functions: every call is the Python path's; a new _fns is taken up
saved_lib, saved_fns = te._lib, te._fns
py_calls = []


class PyLib(object):
    tlmpi_allreduce_enqueue_f = staticmethod(lambda *a: py_calls.append(("py-allreduce",) + a) or 0)
    tlmpi_allgather_enqueue_f = staticmethod(lambda *a: py_calls.append(("py-allgather",) + a) or 0)
    tlmpi_reduce_scatter_block_enqueue_f = staticmethod(lambda *a: py_calls.append(("py-rsb",) + a) or 0)


te._lib, te._fns = PyLib(), None
c0, p0 = fast.calls, fast.passed
AR(None, A(8))
AR(None, A(8))
check(fast.calls == c0 and fast.passed == p0 + 2 and len(py_calls) == 2 and py_calls[-1][0] == "py-allreduce",
      "Python callables as entry points: calls %d passed %d, recorded %r" % (fast.calls - c0, fast.passed - p0,
                                                                              py_calls))
te._lib, te._fns = Lib("new-"), None
del calls[:]
AR(None, A(8))   # the Python path binds the new _fns
AR(None, A(8))   # the extension takes it up
check(fast.calls == c0 + 1 and [x[0] for x in calls] == ["new-allreduce"] * 2,
      "a new _fns: calls %d, recorded %r" % (fast.calls - c0, calls))
te._lib, te._fns = saved_lib, saved_fns

# TLMPI_PY_FAST=0: the module does not load the extension
env = dict(os.environ, TLMPI_PY_FAST="0", PYTHONPATH=os.pathsep.join([src, build]))
out = subprocess.run([sys.executable, "-c", "import sys, types; sys.modules['mpi4py'] = types.ModuleType('mpi4py'); "
                      "import tlmpi_enqueue as te; print(te._fast is None, te._fast_ar is None, te._fast_why)"],
                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True).stdout
check(out.strip() == "True True TLMPI_PY_FAST=0", "TLMPI_PY_FAST=0: %r" % out)
env["TLMPI_PY_FAST"] = "1"
out = subprocess.run([sys.executable, "-c", "import tlmpi_enqueue as te; print(te._fast is not None, te._fast_why)"],
                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True).stdout
check(out.strip() == "True", "TLMPI_PY_FAST=1: %r" % out)

# no references leaked: many calls of each kind, in the extension and passed to Python
x, y, z, w = A(8), A(8, ptr=0x2000), Cai(0x6000, (4,), "<f4", 2), TorchLike(0x9000, 4, "float32")
bad = A(5)
te._fast_use(True)
calls_before = fast.calls


def loop(k):
    for _ in range(k):
        AR(x, y, "sum", comm, stream=st)
        AR(None, z)
        AR(None, w)
        AG(None, y)
        RSB(y, A(2))
        try:
            AR(bad, y)
        except ValueError:
            pass
        del calls[:]


loop(200)
blocks = sys.getallocatedblocks()
loop(2000)
grown = sys.getallocatedblocks() - blocks
check(grown < 200, "allocated blocks grew by %d over 2000 rounds of calls" % grown)
made = fast.calls - calls_before
check(made == 2200 * 5, "the extension made %d of the loop's %d calls" % (made, 2200 * 5))

print("python_fast: %s: %d checks, %d failures (extension: %d calls made, %d passed to Python)"
      % ("PASS" if fails == 0 else "FAIL", checks, fails, fast.calls, fast.passed))
sys.exit(1 if fails else 0)
