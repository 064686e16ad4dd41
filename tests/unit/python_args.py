# python_args: what tlmpi_enqueue's collectives (python/tlmpi_enqueue.py) hand to the library, without
# MPI, a GPU or libtlmpi: mpi4py is replaced by a stand-in module (handles are numbers; these stand-ins
# are tests/unit/py_standins.py, shared with python_fast), the library's
# entry points by recorders, and arrays are CuPy-like (a stand-in "cupy" module: ndarray with data.ptr,
# size, dtype, flags, and a __cuda_array_interface__ that counts its uses), __cuda_array_interface__
# objects and torch-like tensors. Checked, per call, the arguments of the C call (pointers, count, the
# datatype / op / communicator handles, the stream):
#   - the three collectives, in place and not, every kind of array, default and explicit streams
#     (int, .ptr, __cuda_stream__, None: CuPy's current stream, the interface's "stream", torch's);
#   - the siblings (allgatherv, reduce_scatter, bcast, reduce, alltoall): the counts and displacement
#     arrays (int64, displs packed by default), in place, the root, recvbuf off MPI_Reduce's root, their
#     argument errors, and a library without their entry points;
#   - nothing of an argument is reused from an earlier call: the same array object with a new pointer,
#     size or dtype, a communicator whose handle changed (freed and reused), a stream object whose
#     handle changed, each reach the library as they are now;
#   - a C-contiguous CuPy array is read without building its __cuda_array_interface__, a
#     non-contiguous one through it (and rejected with the interface's message);
#   - argument errors raise before the library is called, a nonzero return raises TlmpiError.
# Prints "python_args: PASS|FAIL: N checks, M failures"; exit 0 or 1.
import ctypes
import os
import sys
import types

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "python"))

sys.path.insert(1, os.path.join(os.environ.get("top_srcdir", "."), "tests", "unit"))
from py_standins import BE, F4, F8, I4, Cai, CpStream, Handle, TorchLike, cai_uses, cp, mpi, ndarray  # noqa: E402

mpi.COMM_WORLD = Handle(301, size=4, rank=1)

import tlmpi_enqueue as te  # noqa: E402

calls = []
ret = [0]


def recorder(name):
    def f(*args):
        # ctypes arrays (the siblings' counts and displacements) recorded as lists of their values
        calls.append((name,) + tuple(list(a) if isinstance(a, ctypes.Array) else a for a in args))
        return ret[0]
    return f


class Lib(object):
    tlmpi_allreduce_enqueue_f = staticmethod(recorder("allreduce"))
    tlmpi_allgather_enqueue_f = staticmethod(recorder("allgather"))
    tlmpi_reduce_scatter_block_enqueue_f = staticmethod(recorder("reduce_scatter_block"))
    tlmpi_enqueue_prepare_f = staticmethod(recorder("prepare"))
    tlmpi_allgatherv_enqueue_f = staticmethod(recorder("allgatherv"))
    tlmpi_reduce_scatter_enqueue_f = staticmethod(recorder("reduce_scatter"))
    tlmpi_bcast_enqueue_f = staticmethod(recorder("bcast"))
    tlmpi_reduce_enqueue_f = staticmethod(recorder("reduce"))
    tlmpi_alltoall_enqueue_f = staticmethod(recorder("alltoall"))

    @staticmethod
    def tlmpi_enqueue_error():
        return b"the stub says no"


class OldLib(object):
    """A libtlmpi from before the siblings' _f entry points."""
    tlmpi_allreduce_enqueue_f = staticmethod(recorder("allreduce"))
    tlmpi_bcast_enqueue_f = staticmethod(recorder("bcast"))

    @staticmethod
    def tlmpi_version():
        return b"0.0-old"


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

# the siblings (COMM_WORLD: 4 ranks, this one rank 1; comm: 2 ranks, rank 0)
AGV, RS, BC, RED, A2A = te.allgatherv, te.reduce_scatter, te.bcast, te.reduce, te.alltoall


class Idx(object):  # an integer that is not an int (numpy's integers)
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


s3, r6, r12 = ndarray(0x1000, (3,), F4), ndarray(0x2000, (6,), F4), ndarray(0x3000, (12,), F4)
# allgatherv: displs packed by default, explicit, in place; zeros
expect(AGV, (s3, r6, [2, 3, 0, 1]), {}, ("allgatherv", 0x1000, 3, 0x2000, [2, 3, 0, 1], [0, 2, 5, 5], FLOAT, WORLD, 0),
       "allgatherv, displs packed")
expect(AGV, (s3, r12, (2, Idx(3), 0, 1), [10, 0, 99, 5]), {"stream": 7},
       ("allgatherv", 0x1000, 3, 0x3000, [2, 3, 0, 1], [10, 0, 99, 5], FLOAT, WORLD, 7),
       "allgatherv, explicit displs (a zero block's displacement not checked), int-like count")
expect(AGV, (None, r6, [2, 3, 0, 1]), {}, ("allgatherv", None, 0, 0x2000, [2, 3, 0, 1], [0, 2, 5, 5], FLOAT, WORLD, 0),
       "allgatherv in place")
expect(AGV, (ndarray(0x1000, (0,), F4), r6, [4, 0, 0, 2], None, None, st), {},
       ("allgatherv", 0, 0, 0x2000, [4, 0, 0, 2], [0, 4, 4, 4], FLOAT, WORLD, 0x56), "allgatherv, this rank's count 0")
expect(AGV, (s3, r6, [3, 3]), {"comm": comm}, ("allgatherv", 0x1000, 3, 0x2000, [3, 3], [0, 3], FLOAT, 310, 0),
       "allgatherv on a 2-rank communicator")
expect(AGV, (s3, r6, [2, 3, 0]), {}, "ValueError", "allgatherv counts of 3 entries, 4 ranks")
expect(AGV, (s3, r6, [2, 3, -1, 1]), {}, "ValueError", "allgatherv negative count")
expect(AGV, (s3, r6, [2, 3.0, 0, 1]), {}, "TypeError", "allgatherv float count")
expect(AGV, (s3, r6, [2, True, 0, 1]), {}, "TypeError", "allgatherv bool count")
expect(AGV, (s3, r6, "2301"), {}, "TypeError", "allgatherv counts a string")
expect(AGV, (s3, r6, 6), {}, "TypeError", "allgatherv counts an int")
expect(AGV, (s3, r6, [2, 3, 0, 1], [0, 2, 5]), {}, "ValueError", "allgatherv displs of 3 entries")
expect(AGV, (s3, r6, [2, 3, 0, 1], [0, 2, 5, -1]), {}, "ValueError", "allgatherv negative displacement")
expect(AGV, (s3, r6, [2, 3, 0, 2]), {}, "ValueError", "allgatherv recvbuf too small (packed)")
expect(AGV, (s3, r6, [2, 3, 0, 1], [0, 2, 5, 6]), {}, "ValueError", "allgatherv recvbuf too small (displs)")
expect(AGV, (None, r6, [2, 3, 0, 2]), {}, "ValueError", "allgatherv in place, recvbuf too small")
expect(AGV, (s3, r6, [2, 2, 0, 1]), {}, "ValueError", "allgatherv sendbuf not counts[rank]")
expect(AGV, (ndarray(0x1000, (3,), I4), r6, [2, 3, 0, 1]), {}, "TypeError", "allgatherv type mismatch")
# reduce_scatter
expect(RS, (r6, s3, [1, 2, 0, 3]), {}, ("reduce_scatter", 0x2000, 0x1000, [1, 2, 0, 3], FLOAT, SUM, WORLD, 0),
       "reduce_scatter, recvbuf larger than its block")
expect(RS, (None, r6, [1, 2, 0, 3], "max"), {"stream": 9},
       ("reduce_scatter", None, 0x2000, [1, 2, 0, 3], FLOAT, MAX, WORLD, 9), "reduce_scatter in place, MAX")
expect(RS, (r6, ndarray(0x1000, (0,), F4), [1, 0, 2, 3]), {},
       ("reduce_scatter", 0x2000, 0, [1, 0, 2, 3], FLOAT, SUM, WORLD, 0), "reduce_scatter, this rank's count 0")
expect(RS, (r6, s3, [1, 2, 0, 2]), {}, "ValueError", "reduce_scatter sendbuf not sum(counts)")
expect(RS, (r6, s3, [1, 4, 0, 1]), {}, "ValueError", "reduce_scatter recvbuf smaller than counts[rank]")
expect(RS, (None, s3, [1, 2, 0, 3]), {}, "ValueError", "reduce_scatter in place, recvbuf smaller than sum(counts)")
expect(RS, (r6, s3, [3, 3]), {}, "ValueError", "reduce_scatter counts of 2 entries, 4 ranks")
expect(RS, (r6, s3, [1, 2, -1, 4]), {}, "ValueError", "reduce_scatter negative count")
expect(RS, (ndarray(0x2000, (6,), I4), s3, [1, 2, 0, 3]), {}, "TypeError", "reduce_scatter type mismatch")
# bcast
expect(BC, (r6,), {}, ("bcast", 0x2000, 6, FLOAT, 0, WORLD, 0), "bcast, root 0")
expect(BC, (r6, 3), {"stream": 5}, ("bcast", 0x2000, 6, FLOAT, 3, WORLD, 5), "bcast, root 3")
expect(BC, (r6, Idx(1), comm), {}, ("bcast", 0x2000, 6, FLOAT, 1, 310, 0), "bcast, root 1 of 2, int-like")
expect(BC, (r6, 2, comm), {}, "ValueError", "bcast root 2 of 2 ranks")
expect(BC, (r6, -1), {}, "ValueError", "bcast negative root")
expect(BC, (r6, 1.0), {}, "TypeError", "bcast float root")
expect(BC, (bytearray(8),), {}, "TypeError", "bcast host object")
# reduce: this rank (1) at the root and off it
expect(RED, (s3, ndarray(0x4000, (3,), F4)), {"root": 1},
       ("reduce", 0x1000, 0x4000, 3, FLOAT, SUM, 1, WORLD, 0), "reduce at the root")
expect(RED, (s3, None), {}, ("reduce", 0x1000, None, 3, FLOAT, SUM, 0, WORLD, 0), "reduce off the root, recvbuf None")
expect(RED, (s3, ndarray(0x4000, (5,), I4), "max", 2), {},
       ("reduce", 0x1000, None, 3, FLOAT, MAX, 2, WORLD, 0), "reduce off the root, recvbuf given: not read")
expect(RED, (None, s3), {"root": 1, "stream": 4}, ("reduce", None, 0x1000, 3, FLOAT, SUM, 1, WORLD, 4),
       "reduce in place at the root")
tt = TorchLike(0x8000, 10, "float32", device=2)
expect(RED, (tt, None, None, 3), {}, ("reduce", 0x8000, None, 10, FLOAT, SUM, 3, WORLD, 0x702),
       "reduce off the root: sendbuf's stream")
expect(RED, (tt, ndarray(0x4000, (10,), F4), None, 1), {}, ("reduce", 0x8000, 0x4000, 10, FLOAT, SUM, 1, WORLD, 0),
       "reduce at the root: recvbuf's stream")
expect(RED, (None, s3), {}, "ValueError", "reduce in place off the root")
expect(RED, (s3, None), {"root": 1}, "ValueError", "reduce at the root, recvbuf None")
expect(RED, (s3, r6), {"root": 1}, "ValueError", "reduce at the root, count mismatch")
expect(RED, (s3, ndarray(0x4000, (3,), I4)), {"root": 1}, "TypeError", "reduce at the root, type mismatch")
expect(RED, (s3, None), {"root": 4}, "ValueError", "reduce root out of range")
# alltoall
expect(A2A, (ndarray(0x1000, (8,), F4), ndarray(0x2000, (8,), F4)), {},
       ("alltoall", 0x1000, 0x2000, 2, FLOAT, WORLD, 0), "alltoall, 4 ranks")
expect(A2A, (None, ndarray(0x2000, (8,), F4), comm), {"stream": 3}, ("alltoall", None, 0x2000, 4, FLOAT, 310, 3),
       "alltoall in place, 2 ranks")
expect(A2A, (None, ndarray(0x2000, (0,), F4)), {}, ("alltoall", None, 0, 0, FLOAT, WORLD, 0), "alltoall, empty")
expect(A2A, (None, r6), {}, "ValueError", "alltoall indivisible")
expect(A2A, (ndarray(0x1000, (4,), F4), ndarray(0x2000, (8,), F4)), {}, "ValueError", "alltoall sendbuf size")
expect(A2A, (ndarray(0x1000, (8,), I4), ndarray(0x2000, (8,), F4)), {}, "TypeError", "alltoall type mismatch")
# a nonzero return, each
ret[0] = 7
expect(AGV, (None, r6, [2, 3, 0, 1]), {}, "TlmpiError after the call", "allgatherv nonzero return")
expect(RS, (None, r6, [1, 2, 0, 3]), {}, "TlmpiError after the call", "reduce_scatter nonzero return")
expect(BC, (r6,), {}, "TlmpiError after the call", "bcast nonzero return")
expect(RED, (s3, None), {}, "TlmpiError after the call", "reduce nonzero return")
expect(A2A, (None, ndarray(0x2000, (8,), F4)), {}, "TlmpiError after the call", "alltoall nonzero return")
try:
    BC(r6)
except te.TlmpiError as err:
    check(err.code == 7 and err.call == "tlmpi_bcast_enqueue_f" and "the stub says no" in str(err),
          "sibling TlmpiError call, code and reason: %s" % err)
ret[0] = 0
# a library without the siblings' entry points: TlmpiError naming them, nothing called; then the new one again
te._lib = OldLib()
expect(BC, (r6,), {}, "TlmpiError", "bcast on a library without the siblings")
try:
    BC(r6)
except te.TlmpiError as err:
    check("tlmpi_allgatherv_enqueue_f" in str(err) and "0.0-old" in str(err), "missing entry points named: %s" % err)
te._lib = Lib()
expect(BC, (r6,), {}, ("bcast", 0x2000, 6, FLOAT, 0, WORLD, 0), "bcast on the new library again")

print("python_args: %s: %d checks, %d failures" % ("PASS" if fails == 0 else "FAIL", checks, fails))
sys.exit(1 if fails else 0)
