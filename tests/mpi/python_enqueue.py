# python_enqueue.py MODE: tests of python/tlmpi_enqueue.py without a GPU, one rank of an MPI job
# started by tests/mpi/python.sh (mpi4py; libtlmpi and the fake CUDA runtime of tests/fakes
# preloaded). MODE: "pure" (the module's own parts only: dtype -> MPI handle mapping, buffer and
# stream extraction, argument checks, the exception), "staging" (TLMPI_TIER=staging: the enqueue
# calls fail with MPI_ERR_UNSUPPORTED_OPERATION unless prepare(sync_fallback=True), then give exact
# results), "nccl" (TLMPI_TIER=nccl with the fake NCCL: stream-ordered, exact results of the three
# collectives, in place and not, several types), "multiple" (the nccl mode at MPI_THREAD_MULTIPLE,
# mpi4py's default; the other modes run at MPI_THREAD_FUNNELED). Every mode also runs the pure part. "Device" memory
# is the fake runtime's cudaMalloc (host memory underneath, so results are read back with memmove).
# TLMPI_TEST_FAST=1 (python.sh, where the build has the module's C extension): the extension must be
# loaded (unless TLMPI_PY_FAST=0, which must keep it out) and, with the library, make calls itself.
# Rank 0 prints "python_enqueue: PASS|FAIL|SKIP ..."; exit 0, 1, or 77 (the libtlmpi preloaded has no
# stream-ordered entry points yet).
import ctypes
import os
import sys

import mpi4py

# mode "multiple": mpi4py's default thread level (tlmpi's GPU turn on, which enqueues do not take);
# the others at MPI_THREAD_FUNNELED
mpi4py.rc.thread_level = "multiple" if sys.argv[1:2] == ["multiple"] else "funneled"
from mpi4py import MPI  # noqa: E402

import tlmpi_enqueue as te  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mode = sys.argv[1] if len(sys.argv) > 1 else "pure"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        sys.stderr.write("python_enqueue: rank %d FAIL: %s\n" % (rank, what))


def raises(exc, fn, what, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    except Exception as e:  # the wrong kind
        check(False, "%s: raised %s (%s), expected %s" % (what, type(e).__name__, e, exc.__name__))
        return None
    check(False, "%s: no %s raised" % (what, exc.__name__))
    return None


class Cai(object):
    """An object exposing __cuda_array_interface__ (v3) over a raw pointer."""

    def __init__(self, ptr, shape, typestr, strides=None, readonly=False, stream=None, mask=None):
        self.__cuda_array_interface__ = {"data": (ptr, readonly), "shape": tuple(shape), "typestr": typestr,
                                         "strides": strides, "version": 3, "stream": stream}
        if mask is not None:
            self.__cuda_array_interface__["mask"] = mask


class TorchDtype(object):
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class TorchLike(object):
    """Enough of torch.Tensor for the module's torch path (the class claims module "torch")."""

    def __init__(self, ptr, n, dtype, cuda=True, contiguous=True):
        self._ptr, self._n, self.dtype, self.is_cuda, self._contig = ptr, n, TorchDtype(dtype), cuda, contiguous

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n

    def is_contiguous(self):
        return self._contig


TorchLike.__module__ = "torch"


def pure():
    # element kinds
    for spec, kind in (("<f4", "f4"), ("|i1", "i1"), ("<u8", "u8"), ("<f2", "f2"), ("float32", "f4"),
                       ("bf16", "bf16"), ("bfloat16", "bf16"), (TorchDtype("bfloat16"), "bf16"),
                       (TorchDtype("int64"), "i8"), (TorchDtype("float16"), "f2"), ("|b1", "b1"), ("<c8", "c8")):
        got = None
        try:
            got = te._kind_of(spec)
        except Exception as e:
            got = "%s: %s" % (type(e).__name__, e)
        check(got == kind, "kind of %s: %r, expected %r" % (spec, got, kind))
    raises(TypeError, te._kind_of, "big-endian typestr", ">f4")
    # kinds -> the MPI's own Fortran handles (no library needed)
    for kind, name in (("f4", "FLOAT"), ("f8", "DOUBLE"), ("i4", "INT32_T"), ("i8", "INT64_T"), ("u1", "UINT8_T"),
                       ("i2", "INT16_T"), ("u4", "UINT32_T"), ("b1", "C_BOOL"), ("c16", "C_DOUBLE_COMPLEX")):
        f = te.mpi_datatype(kind)
        check(f == getattr(MPI, name).py2f(), "mpi_datatype(%s) = %d, MPI.%s.py2f() = %d"
              % (kind, f, name, getattr(MPI, name).py2f()))
        check(MPI.Datatype.f2py(f).Get_size() == te._itemsize(kind), "size of the %s handle" % kind)
    check(te._op_f(None) == MPI.SUM.py2f() and te._op_f("max") == MPI.MAX.py2f() and te._op_f(MPI.PROD) ==
          MPI.PROD.py2f(), "op handles")
    check(te._comm_f(None) == MPI.COMM_WORLD.py2f(), "default communicator")
    # buffers: __cuda_array_interface__
    b = te._buffer(Cai(4096, (3, 5), "<f8"), "x")
    check((b.ptr, b.n, b.kind) == (4096, 15, "f8"), "CAI buffer (%s, %s, %s)" % (b.ptr, b.n, b.kind))
    b = te._buffer(Cai(4096, (3, 5), "<f4", strides=(20, 4)), "x")
    check(b.n == 15, "CAI with explicit C strides")
    b = te._buffer(Cai(4096, (4, 1), "<f4", strides=(4, 64)), "x")
    check(b.n == 4, "CAI with a stride on a dimension of 1")
    raises(ValueError, te._buffer, "CAI, non-contiguous", Cai(4096, (3, 5), "<f4", strides=(4, 12)), "x")
    raises(ValueError, te._buffer, "CAI, read-only recvbuf", Cai(4096, (8,), "<f4", readonly=True), "r", True)
    raises(ValueError, te._buffer, "CAI, masked", Cai(4096, (8,), "<f4", mask=object()), "x")
    raises(TypeError, te._buffer, "host object", bytearray(16), "x")
    # buffers: the torch tensor API
    b = te._buffer(TorchLike(8192, 10, "bfloat16"), "x")
    check((b.ptr, b.n, b.kind, b.origin) == (8192, 10, "bf16", "torch"), "torch-like buffer")
    raises(TypeError, te._buffer, "torch CPU tensor", TorchLike(8192, 10, "float32", cuda=False), "x")
    raises(ValueError, te._buffer, "torch non-contiguous", TorchLike(8192, 10, "float32", contiguous=False), "x")
    # streams
    raw = Cai(4096, (8,), "<f4")
    check(te._stream_ptr(None, [te._buffer(raw, "x")]) == 0, "no stream: legacy default")
    check(te._stream_ptr(None, [te._buffer(Cai(4096, (8,), "<f4", stream=2), "x")]) == 2, "CAI stream 2")
    check(te._stream_ptr(0x1234, []) == 0x1234, "int stream")

    class P(object):
        ptr = 0x55

    class T(object):
        cuda_stream = 0x66

    class N(object):
        handle = ctypes.c_void_p(0x77)

    class S(object):
        def __cuda_stream__(self):
            return (0, 0x88)
    check([te._stream_ptr(o(), []) for o in (P, T, N, S)] == [0x55, 0x66, 0x77, 0x88], "stream objects")
    raises(TypeError, te._stream_ptr, "not a stream", "stream", [])
    # argument checks before anything reaches the library
    a8, a9 = Cai(4096, (8,), "<f4"), Cai(8192, (9,), "<f4")
    raises(ValueError, te.allreduce, "allreduce count mismatch", a8, a9)
    raises(TypeError, te.allreduce, "allreduce type mismatch", Cai(4096, (8,), "<i4"), Cai(8192, (8,), "<f4"))
    raises(ValueError, te.allgather, "allgather recvbuf size", a8, Cai(8192, (8 * size + 1,), "<f4"))
    raises(ValueError, te.reduce_scatter_block, "reduce_scatter_block sendbuf size",
           Cai(4096, (8 * size + 1,), "<f4"), a8)
    if size > 1:
        raises(ValueError, te.allgather, "allgather in place, indivisible", None, Cai(4096, (size * 3 + 1,), "<f4"))
    e = te.TlmpiError("tlmpi_x", MPI.ERR_BUFFER, "why")
    check(e.code == MPI.ERR_BUFFER and "why" in str(e) and "tlmpi_x" in str(e), "TlmpiError text: %s" % e)


# --- with the library and the fake CUDA runtime ----------------------------------------------------

rt = ctypes.CDLL(None)


class Dev(object):
    """A 1-d array in the fake runtime's device memory."""

    def __init__(self, n, typestr):
        self.n, self.typestr, self.isz = n, typestr, int(typestr[2:])
        p = ctypes.c_void_p()
        rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(max(1, n * self.isz)))
        assert rc == 0, "cudaMalloc: %d" % rc
        self.ptr = p.value
        self.__cuda_array_interface__ = {"data": (self.ptr, False), "shape": (n,), "typestr": typestr,
                                         "strides": None, "version": 3}
        self.ctype = {"<f4": ctypes.c_float, "<f8": ctypes.c_double, "<i4": ctypes.c_int32,
                      "<i8": ctypes.c_int64}[typestr]

    def set(self, values):
        arr = (self.ctype * self.n)(*values)
        ctypes.memmove(self.ptr, arr, self.n * self.isz)

    def get(self):
        arr = (self.ctype * self.n)()
        ctypes.memmove(arr, self.ptr, self.n * self.isz)
        return list(arr)


def val(r, i, salt):
    return ((i * 7 + r * 13 + salt * 5) % 17) - 8


def coll_round(salt, typestr, n, in_place):
    """The three collectives on exact small integers, checked against the sum over ranks."""
    what = "%s n=%d %s salt %d" % (typestr, n, "in place" if in_place else "out of place", salt)
    # allreduce
    s, r = Dev(n, typestr), Dev(n, typestr)
    mine = [val(rank, i, salt) for i in range(n)]
    expect = [sum(val(q, i, salt) for q in range(size)) for i in range(n)]
    if in_place:
        r.set(mine)
        te.allreduce(None, r, MPI.SUM, comm)
    else:
        s.set(mine)
        te.allreduce(s, r, MPI.SUM, comm)
    check(r.get() == expect, "allreduce %s" % what)
    # allgather
    ag = Dev(n * size, typestr)
    full = [val(q, i, salt + 1) for q in range(size) for i in range(n)]
    if in_place:
        ag.set([val(rank, i, salt + 1) if q == rank else 0 for q in range(size) for i in range(n)])
        te.allgather(None, ag, comm)
    else:
        s.set([val(rank, i, salt + 1) for i in range(n)])
        te.allgather(s, ag, comm)
    check(ag.get() == full, "allgather %s" % what)
    # reduce_scatter_block
    big = Dev(n * size, typestr)
    big.set([val(rank, i, salt + 2) for i in range(n * size)])
    blk = [sum(val(q, i, salt + 2) for q in range(size)) for i in range(rank * n, rank * n + n)]
    if in_place:
        te.reduce_scatter_block(None, big, MPI.SUM, comm)
        check(big.get()[:n] == blk, "reduce_scatter_block %s" % what)
    else:
        te.reduce_scatter_block(big, r, MPI.SUM, comm)
        check(r.get() == blk, "reduce_scatter_block %s" % what)


def library_part():
    try:
        te.library()
    except te.TlmpiError as e:
        return "SKIP: %s" % e.reason
    check(te.library_origin().startswith("already loaded"), "library found preloaded: %s" % te.library_origin())
    # half types: tlmpi's own handles, crossing as Fortran handles
    f16, bf16 = te.mpi_datatype("f2"), te.mpi_datatype("bf16")
    check(f16 != bf16 and MPI.Datatype.f2py(f16).Get_size() == 2 and MPI.Datatype.f2py(bf16).Get_size() == 2,
          "half handles %d %d" % (f16, bf16))
    check(te.mpi_datatype(TorchDtype("float16")) == f16, "torch float16 -> tlmpi float16")
    # host-side argument errors: MPI error classes, tlmpi_enqueue_error's text
    host = (ctypes.c_float * 16)()
    hb = Cai(ctypes.addressof(host), (16,), "<f4")
    e = raises(te.TlmpiError, te.allreduce, "allreduce on host memory", None, hb)
    check(e is None or (e.code == MPI.ERR_BUFFER and e.reason), "host buffer: %s" % e)
    d = Dev(16, "<f4")
    e = raises(te.TlmpiError, te.allreduce, "allreduce on MPI_COMM_NULL", None, d, MPI.SUM, MPI.COMM_NULL)
    check(e is None or (e.code == MPI.ERR_COMM and e.reason), "COMM_NULL: %s" % e)
    e = raises(te.TlmpiError, te.allreduce, "allreduce with MPI_OP_NULL", None, d, MPI.OP_NULL, comm)
    check(e is None or (e.code == MPI.ERR_OP and e.reason), "OP_NULL: %s" % e)
    if mode == "staging":
        # no stream-ordered tier: a clear error, then the synchronous fallback when allowed
        te.prepare(comm)
        e = raises(te.TlmpiError, te.allreduce, "staging without fallback", None, d, MPI.SUM, comm)
        check(e is None or (e.code == MPI.ERR_UNSUPPORTED_OPERATION and e.reason), "staging: %s" % e)
        te.prepare(comm, sync_fallback=True)
    elif mode in ("nccl", "multiple"):
        te.prepare(comm)
    for salt, (ts, n) in enumerate((("<f4", 1), ("<f4", 1000), ("<f8", 257), ("<i4", 64), ("<i8", 3))):
        for in_place in (False, True):
            coll_round(salt, ts, n, in_place)
    if mode in ("nccl", "multiple"):
        st = te.form_stats()
        for coll in ("allreduce", "allgather", "reduce_scatter_block"):
            check(st.get((coll, "nccl", "enqueue"), (0, 0))[0] >= 10, "%s counted as nccl enqueue: %s" % (coll, st))
    return None


pure()
skip = None
if mode != "pure":
    skip = library_part()
off = os.environ.get("TLMPI_PY_FAST") == "0"
if off:
    check(te._fast is None, "TLMPI_PY_FAST=0, yet the extension is loaded")
    how = "Python path (TLMPI_PY_FAST=0)"
elif te._fast is None:
    check(os.environ.get("TLMPI_TEST_FAST") != "1", "the extension was built but not loaded: %s" % te._fast_why)
    how = "Python path (%s)" % te._fast_why
else:
    check(mode == "pure" or skip or te._fast.calls > 0, "the extension made no call (%d passed to Python)"
          % te._fast.passed)
    how = "extension: %d calls made, %d passed to Python" % (te._fast.calls, te._fast.passed)
nfail = comm.allreduce(len(failures))
if rank == 0:
    if nfail:
        print("python_enqueue: FAIL (mode %s, %d ranks): %d checks failed" % (mode, size, nfail))
    elif skip:
        print("python_enqueue: %s (mode %s; the pure part passed)" % (skip, mode))
    else:
        print("python_enqueue: PASS (mode %s, %d ranks, mpi4py %s, %s; %s)"
              % (mode, size, __import__("mpi4py").__version__, MPI.get_vendor()[0], how))
sys.stdout.flush()
sys.exit(1 if nfail else 77 if skip else 0)
