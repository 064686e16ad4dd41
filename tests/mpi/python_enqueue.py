# python_enqueue.py MODE: tests of python/tlmpi_enqueue.py without a GPU, one rank of an MPI job
# started by tests/mpi/python.sh (mpi4py; libtlmpi and the fake CUDA runtime of tests/fakes
# preloaded). MODE: "pure" (the module's own parts only: dtype -> MPI handle mapping, buffer and
# stream extraction, argument checks, the exception), "staging" (TLMPI_TIER=staging: the enqueue
# calls fail with MPI_ERR_UNSUPPORTED_OPERATION unless prepare(sync_fallback=True), then give exact
# results), "nccl" (TLMPI_TIER=nccl with the fake NCCL: stream-ordered, exact results of the three
# collectives, in place and not, several types), "multiple" (the nccl mode at MPI_THREAD_MULTIPLE,
# mpi4py's default; the other modes run at MPI_THREAD_FUNNELED). In every mode but "pure" the siblings
# (allgatherv, reduce_scatter, bcast, reduce, alltoall; no stream-ordered tier here) run on a
# communicator prepared with the synchronous fallback, in place and not, uneven counts with zeros,
# several types, roots and ops, each result exactly what mpi4py's own call on host copies gives
# (staging: refused without the fallback first). Every mode also runs the pure part. "Device" memory
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
        raises(ValueError, te.alltoall, "alltoall indivisible", None, Cai(4096, (size * 3 + 1,), "<f4"))
    raises(ValueError, te.allgatherv, "allgatherv counts per rank", a8, a9, [8] * (size + 1))
    raises(ValueError, te.allgatherv, "allgatherv recvbuf too small", None, a8, [8] * size)
    raises(ValueError, te.reduce_scatter, "reduce_scatter sendbuf size", a9, a8, [8] + [0] * (size - 1))
    raises(ValueError, te.bcast, "bcast root out of range", a8, size)
    if size > 1:
        raises(ValueError, te.reduce, "reduce in place off the root", None, a8, root=(rank + 1) % size)
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


CTYPES = {"<f4": ctypes.c_float, "<f8": ctypes.c_double, "<i4": ctypes.c_int32, "<i8": ctypes.c_int64}
MPI_T = {"<f4": MPI.FLOAT, "<f8": MPI.DOUBLE, "<i4": MPI.INT32_T, "<i8": MPI.INT64_T}
POISON = -99


def host(values, ts):
    return (CTYPES[ts] * len(values))(*values)


def sib_round(sc, salt, ts, in_place):
    """The siblings on sc (prepared with the synchronous fallback) against mpi4py's calls on host copies,
    the same on every rank; uneven counts with zeros (a rank's count 0 in most rounds)."""
    what = "%s salt %d %s" % (ts, salt, "in place" if in_place else "out of place")
    mt = MPI_T[ts]
    counts = [((q + salt) % 3) * (salt % 4 + 2) for q in range(size)]
    op, opname = (MPI.SUM, "sum") if salt % 2 == 0 else (MPI.MAX, "max")
    # allgatherv: displs packed (None) or with a gap before every block
    if salt % 2:
        displs = [sum(counts[:q]) + q for q in range(size)]
    else:
        displs = [sum(counts[:q]) for q in range(size)]
    total = max([d + c for c, d in zip(counts, displs)] + [0]) + 1
    mine = [val(rank, i, salt) for i in range(counts[rank])]
    init = [POISON] * total
    if in_place:
        init[displs[rank]:displs[rank] + counts[rank]] = mine
    r, hr = Dev(total, ts), host(init, ts)
    r.set(init)
    if in_place:
        te.allgatherv(None, r, counts, None if salt % 2 == 0 else displs, comm=sc)
        sc.Allgatherv(MPI.IN_PLACE, [hr, (counts, displs), mt])
    else:
        sd = Dev(counts[rank], ts)
        sd.set(mine)
        te.allgatherv(sd, r, counts, None if salt % 2 == 0 else displs, sc)
        sc.Allgatherv([host(mine, ts), mt], [hr, (counts, displs), mt])
    check(r.get() == list(hr), "allgatherv %s counts %s displs %s: %s, mpi4py %s" % (what, counts, displs, r.get(),
                                                                                    list(hr)))
    # reduce_scatter: recvbuf one element longer than the block (left as it was)
    tot = sum(counts)
    inp = [val(rank, i, salt + 1) for i in range(tot)]
    c = counts[rank]
    if in_place:
        r, hr = Dev(tot, ts), host(inp, ts)
        r.set(inp)
        te.reduce_scatter(None, r, counts, opname, sc)
        sc.Reduce_scatter(MPI.IN_PLACE, [hr, tot, mt], counts, op)
        got, want = r.get()[:c], list(hr)[:c]
    else:
        sd, r, hr = Dev(tot, ts), Dev(c + 1, ts), host([POISON] * (c + 1), ts)
        sd.set(inp)
        r.set([POISON] * (c + 1))
        te.reduce_scatter(sd, r, counts, op, sc)
        sc.Reduce_scatter([host(inp, ts), mt], [hr, c, mt], counts, op)
        got, want = r.get(), list(hr)
    exact = [(sum if op == MPI.SUM else max)(val(q, i, salt + 1) for q in range(size))
             for i in range(sum(counts[:rank]), sum(counts[:rank]) + c)]
    check(got == want and got[:c] == exact, "reduce_scatter %s counts %s op %s: %s, mpi4py %s, exact %s"
          % (what, counts, opname, got, want, exact))
    # bcast (in_place: the root's buffer is the one sent anyway; the round picks another root)
    root = (salt + (1 if in_place else 0)) % size
    n = counts[root] + salt % 3
    init = [val(root, i, salt + 2) if rank == root else POISON for i in range(n)]
    r, hr = Dev(n, ts), host(init, ts)
    r.set(init)
    te.bcast(r, root, sc)
    sc.Bcast([hr, mt], root)
    check(r.get() == list(hr) == [val(root, i, salt + 2) for i in range(n)], "bcast %s root %d n %d: %s, mpi4py %s"
          % (what, root, n, r.get(), list(hr)))
    # reduce: in place at the root; off the root recvbuf None, or (odd salts) a buffer left untouched
    root = (salt + 1) % size
    inp = [val(rank, i, salt + 3) for i in range(n)]
    at_root = rank == root
    r = Dev(n, ts)
    if in_place and at_root:
        r.set(inp)
        te.reduce(None, r, opname, root, sc)
        hr = host(inp, ts)
        sc.Reduce(MPI.IN_PLACE, [hr, mt], op, root)
    else:
        sd = Dev(n, ts)
        sd.set(inp)
        r.set([POISON] * n)
        te.reduce(sd, r if at_root or salt % 2 else None, op, root, sc)
        hr = host([POISON] * n, ts)
        sc.Reduce([host(inp, ts), mt], [hr, mt] if at_root else None, op, root)
    if at_root:
        exact = [(sum if op == MPI.SUM else max)(val(q, i, salt + 3) for q in range(size)) for i in range(n)]
        check(r.get() == list(hr) == exact, "reduce %s root %d n %d op %s: %s, mpi4py %s"
              % (what, root, n, opname, r.get(), list(hr)))
    else:
        check(r.get() == [POISON] * n, "reduce %s: recvbuf off the root written" % what)
    # alltoall: a block of n per rank
    n = counts[(salt + 2) % size]
    inp = [val(rank, i, salt + 4) for i in range(n * size)]
    r = Dev(n * size, ts)
    hr = host(inp if in_place else [POISON] * (n * size), ts)
    if in_place:
        r.set(inp)
        te.alltoall(None, r, sc)
        sc.Alltoall(MPI.IN_PLACE, [hr, mt])
    else:
        sd = Dev(n * size, ts)
        sd.set(inp)
        r.set([POISON] * (n * size))
        te.alltoall(sd, r, comm=sc)
        sc.Alltoall([host(inp, ts), mt], [hr, mt])
    exact = [val(q, rank * n + i, salt + 4) for q in range(size) for i in range(n)]
    check(r.get() == list(hr) == exact, "alltoall %s n %d: %s, mpi4py %s" % (what, n, r.get(), list(hr)))


def siblings(sc):
    for salt, ts in enumerate(("<f4", "<i4", "<f8", "<i8", "<f4", "<i4")):
        for in_place in (False, True):
            sib_round(sc, salt, ts, in_place)
    st = te.form_stats()
    for coll in ("allgatherv", "reduce_scatter", "bcast", "reduce", "alltoall"):
        calls = sum(v[0] for k, v in st.items() if k[0] == coll and k[2] == "enqueue")
        check(calls >= 6, "%s: %d calls counted as enqueue calls: %s" % (coll, calls, st))


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
        for name, fn, args in (("allgatherv", te.allgatherv, (None, d, [16 // size] * size, None, comm)),
                               ("reduce_scatter", te.reduce_scatter, (None, d, [16 // size] * size, None, comm)),
                               ("bcast", te.bcast, (d, 0, comm)), ("reduce", te.reduce, (d, Dev(16, "<f4"), None, 0, comm)),
                               ("alltoall", te.alltoall, (None, Dev(2 * size, "<f4"), comm))):
            e = raises(te.TlmpiError, fn, "%s on staging without fallback" % name, *args)
            check(e is None or (e.code == MPI.ERR_UNSUPPORTED_OPERATION and e.call == "tlmpi_%s_enqueue_f" % name),
                  "%s on staging: %s" % (name, e))
        e = raises(te.TlmpiError, te.bcast, "bcast on host memory", hb, 0, comm)
        check(e is None or (e.code == MPI.ERR_BUFFER and e.reason), "bcast, host buffer: %s" % e)
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
    # the siblings on a communicator of their own, prepared with the synchronous fallback
    sc = comm.Dup()
    te.prepare(sc, sync_fallback=True)
    siblings(sc)
    sc.Free()
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
