# tlmpi_enqueue: stream-ordered MPI collectives on CUDA arrays from Python (mpi4py + CuPy, PyTorch,
# Numba or anything exposing __cuda_array_interface__), through libtlmpi's Fortran-handle entry
# points (tlmpi_*_enqueue_f in include/tlmpi.h) with ctypes: pure Python, no build step, any MPI
# (MPICH or Open MPI: handles cross as MPI_Fint, from mpi4py's py2f()).
#
#   import tlmpi_enqueue as te               # after or before "from mpi4py import MPI"
#   te.prepare(MPI.COMM_WORLD)               # collective: build the plan before any graph capture
#   te.allreduce(None, grad)                 # in place, MPI.SUM, COMM_WORLD, the array's current stream
#   te.allgather(shard, full, comm=comm, stream=s)
#   te.reduce_scatter_block(full, shard, op=MPI.SUM, comm=comm, stream=s)
#   te.allgatherv(mine, full, counts, displs=None, comm=comm)   # the siblings: counts in elements, per rank
#   te.reduce_scatter(full, mine, counts, op=MPI.SUM, comm=comm)
#   te.bcast(buf, root=0, comm=comm); te.reduce(x, out, op=MPI.SUM, root=0); te.alltoall(x, y, comm=comm)
#
# Each call is ordered after the work already on `stream` and returns without waiting for the GPU;
# inside a CUDA graph capture (cupy Stream.begin_capture, torch.cuda.graph) it is recorded and every
# replay runs a fresh collective. Buffers must stay alive until the stream (or every replay of the
# graph) has passed the call. sendbuf None means MPI_IN_PLACE. stream None means the current stream
# of the buffer's framework (cupy.cuda.get_current_stream(), torch.cuda.current_stream()), or the
# "stream" entry of a __cuda_array_interface__, else the legacy default stream.
#
# libtlmpi is found: already loaded in the process (LD_PRELOAD=libtlmpi.so, the supported way: it
# then also intercepts mpi4py's own MPI calls), else $TLMPI_LIBRARY, else ctypes.util.find_library.
# A nonzero return of the C call raises TlmpiError (its .code is the MPI error class, its text is
# tlmpi_enqueue_error()). Installed by `make install` into $(datadir)/tlmpi/python (README.md).
#
# Optional: the C extension _tlmpi_fast (python/_tlmpi_fast.c; built where configure finds Python.h,
# installed beside this file, else found on sys.path) does a collective's per-call work in C (the
# arguments read and checked as below, the entry point called directly) and leaves to the Python code
# any call it does not take as it is, which then raises its own errors. TLMPI_PY_FAST=0 turns it off.
# It serves allreduce, allgather and reduce_scatter_block; the siblings (allgatherv, reduce_scatter,
# bcast, reduce, alltoall) always run the Python code below. Their rank and size checks, as the
# three's, read comm's own group (an intracommunicator).
import ctypes
import ctypes.util
import os
import sys

__all__ = ["TlmpiError", "SYNC_FALLBACK", "NO_MIXING", "library", "library_origin", "version", "prepare",
           "allreduce", "allgather", "reduce_scatter_block", "allgatherv", "reduce_scatter", "bcast", "reduce",
           "alltoall", "mpi_datatype", "form_stats"]

SYNC_FALLBACK = 0x1  # TLMPI_ENQUEUE_SYNC_FALLBACK: tiers that cannot run stream-ordered run synchronously
NO_MIXING = 0x2      # TLMPI_ENQUEUE_NO_MIXING: captured work never overlaps uncaptured work


class TlmpiError(RuntimeError):
    """A tlmpi enqueue call returned an MPI error class (.code); .reason is tlmpi_enqueue_error()."""

    def __init__(self, call, code, reason):
        self.call, self.code, self.reason = call, code, reason
        cls = ""
        try:
            from mpi4py import MPI
            cls = MPI.Get_error_string(code)
        except Exception:  # mpi4py missing or MPI finalized: the number is enough
            pass
        RuntimeError.__init__(self, "%s: error class %d%s: %s" % (call, code, " (%s)" % cls if cls else "",
                                                                   reason or "no reason given"))


# --- the library -----------------------------------------------------------------------------------

_ENTRY = "tlmpi_allreduce_enqueue_f"
_lib = None
_origin = None
_fns = None  # the collectives' entry points of _lib (_entries)
_sfns = None  # (the library, its siblings' entry points) (_sib_entry)
c_fint = ctypes.c_int  # MPI_Fint: a C int on every supported MPI (not with Fortran -i8 builds)


def _declare(lib):
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    sigs = {
        "tlmpi_enqueue_prepare_f": [c_fint, ctypes.c_int],
        "tlmpi_allreduce_enqueue_f": [vp, vp, i64, c_fint, c_fint, c_fint, vp],
        "tlmpi_allgather_enqueue_f": [vp, vp, i64, c_fint, c_fint, vp],
        "tlmpi_reduce_scatter_block_enqueue_f": [vp, vp, i64, c_fint, c_fint, c_fint, vp],
    }
    for name, argtypes in sigs.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = argtypes, ctypes.c_int
    p64 = ctypes.POINTER(i64)
    sib = {  # the siblings' (a libtlmpi without them still serves the three: _sib_entries says so)
        "tlmpi_allgatherv_enqueue_f": [vp, i64, vp, p64, p64, c_fint, c_fint, vp],
        "tlmpi_reduce_scatter_enqueue_f": [vp, vp, p64, c_fint, c_fint, c_fint, vp],
        "tlmpi_bcast_enqueue_f": [vp, i64, c_fint, ctypes.c_int, c_fint, vp],
        "tlmpi_reduce_enqueue_f": [vp, vp, i64, c_fint, c_fint, ctypes.c_int, c_fint, vp],
        "tlmpi_alltoall_enqueue_f": [vp, vp, i64, c_fint, c_fint, vp],
    }
    for name, argtypes in sib.items():
        f = getattr(lib, name, None)
        if f is not None:
            f.argtypes, f.restype = argtypes, ctypes.c_int
    lib.tlmpi_enqueue_error.argtypes, lib.tlmpi_enqueue_error.restype = [], ctypes.c_char_p
    lib.tlmpi_version.argtypes, lib.tlmpi_version.restype = [], ctypes.c_char_p


def library():
    """The loaded libtlmpi (ctypes.CDLL); raises OSError when none is found, TlmpiError when the one
    found has no stream-ordered entry points."""
    global _lib, _origin
    if _lib is not None:
        return _lib
    tried = []
    cands = [(None, "already loaded (LD_PRELOAD or linked)")]
    env = os.environ.get("TLMPI_LIBRARY")
    if env:
        cands.append((env, "$TLMPI_LIBRARY=" + env))
    found = ctypes.util.find_library("tlmpi")
    if found:
        cands.append((found, "find_library('tlmpi') = " + found))
    for path, origin in cands:
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s: %s" % (origin, e))
            continue
        if not hasattr(lib, "tlmpi_version"):
            tried.append("%s: no libtlmpi symbols" % origin)
            continue
        if not hasattr(lib, _ENTRY):
            lib.tlmpi_version.restype = ctypes.c_char_p
            raise TlmpiError("tlmpi_enqueue", -1, "the libtlmpi found (%s, version %s) has no stream-ordered "
                             "entry points (%s)" % (origin, lib.tlmpi_version().decode(), _ENTRY))
        _declare(lib)
        _lib, _origin = lib, origin
        return lib
    raise OSError("tlmpi_enqueue: libtlmpi not found; run with LD_PRELOAD=/path/to/libtlmpi.so "
                  "(mpiexec -x LD_PRELOAD=... under Open MPI, -genv LD_PRELOAD ... under MPICH) or set "
                  "TLMPI_LIBRARY. Tried: " + "; ".join(tried))


def library_origin():
    """How the library was found ("already loaded ..." when preloaded), after library()."""
    library()
    return _origin


def version():
    return library().tlmpi_version().decode()


def _check(rc, call):
    if rc != 0:
        reason = library().tlmpi_enqueue_error()
        raise TlmpiError(call, rc, reason.decode(errors="replace") if reason else "")


# --- MPI handles -----------------------------------------------------------------------------------

def _mpi():
    from mpi4py import MPI
    return MPI


def _handle_size(MPI):
    """sizeof(MPI_Datatype): 4 on the MPICH ABI (int handles, MPI_Type_c2f the identity), 8 on
    Open MPI (pointers)."""
    try:
        return MPI._sizeof(MPI.Datatype)
    except Exception:
        vendor = MPI.get_vendor()[0]
        return 4 if vendor in ("MPICH", "Intel MPI", "MVAPICH", "MVAPICH2", "Microsoft MPI") else 8


def _comm_f(comm):
    if comm is None:
        comm = _mpi().COMM_WORLD
    return comm.py2f()


_OPS = {"sum": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX"}


def _op_f(op):
    MPI = _mpi()
    if op is None:
        op = MPI.SUM
    elif isinstance(op, str):
        op = getattr(MPI, _OPS.get(op.lower(), op.upper()))
    return op.py2f()


# element kinds: numpy-style typestr without byte order ("f4"), plus "bf16"; -> mpi4py name
_MPI_NAMES = {
    "f4": "FLOAT", "f8": "DOUBLE",
    "i1": "INT8_T", "i2": "INT16_T", "i4": "INT32_T", "i8": "INT64_T",
    "u1": "UINT8_T", "u2": "UINT16_T", "u4": "UINT32_T", "u8": "UINT64_T",
    "b1": "C_BOOL", "c8": "C_FLOAT_COMPLEX", "c16": "C_DOUBLE_COMPLEX",
}
_HALF = {"f2": "tlmpi_type_float16", "bf16": "tlmpi_type_bfloat16"}
_TORCH_KINDS = {
    "torch.float32": "f4", "torch.float64": "f8", "torch.float16": "f2", "torch.bfloat16": "bf16",
    "torch.int8": "i1", "torch.int16": "i2", "torch.int32": "i4", "torch.int64": "i8",
    "torch.uint8": "u1", "torch.uint16": "u2", "torch.uint32": "u4", "torch.uint64": "u8",
    "torch.bool": "b1", "torch.complex64": "c8", "torch.complex128": "c16",
}
_NAMES = {"float16": "f2", "float32": "f4", "float64": "f8", "int8": "i1", "int16": "i2", "int32": "i4",
          "int64": "i8", "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8", "bool": "b1",
          "complex64": "c8", "complex128": "c16"}  # numpy's dtype names (str(numpy.dtype(...)))
_SIZES = {"bf16": 2}
_dt_cache = {}


def _kind_of(dtype):
    """Element kind ("f4", "bf16", ...) of a numpy/cupy dtype, a typestr ("<f4"), a dtype name
    ("float32"), a torch dtype or a kind itself."""
    s = str(dtype)
    if s in _TORCH_KINDS:
        return _TORCH_KINDS[s]
    if s in ("bfloat16", "bf16"):  # also ml_dtypes' numpy bfloat16
        return "bf16"
    if s in _MPI_NAMES or s in _HALF:
        return s
    if s in _NAMES:
        return _NAMES[s]
    ts = getattr(dtype, "str", None)  # numpy (and cupy) dtype objects
    if not isinstance(ts, str):
        if isinstance(dtype, str) and dtype[:1] in "<>|=":
            ts = dtype
        else:
            try:
                import numpy
                ts = numpy.dtype(dtype).str
            except Exception:
                raise TypeError("tlmpi_enqueue: unknown dtype %r" % (dtype,))
    if ts[0] == ">" and ts[2:] != "1":
        raise TypeError("tlmpi_enqueue: big-endian data (%s) is not supported" % ts)
    return ts[1:]


def _half_f(fn_name):
    """Fortran handle of tlmpi's half type (tlmpi_type_float16/bfloat16 return a C handle)."""
    MPI, lib = _mpi(), library()
    fn = getattr(lib, fn_name)
    size = _handle_size(MPI)
    fn.argtypes = []
    fn.restype = ctypes.c_int if size == 4 else ctypes.c_void_p
    h = fn() or 0
    if size == 4:  # MPICH ABI: MPI_Type_c2f(h) is (MPI_Fint)h
        f = int(h)
    elif hasattr(MPI.Datatype, "fromhandle"):  # mpi4py >= 4
        f = MPI.Datatype.fromhandle(h).py2f()
    else:  # Open MPI: MPI_Type_c2f is a function of libmpi (found through libtlmpi's dependencies)
        c2f = lib.PMPI_Type_c2f
        c2f.argtypes, c2f.restype = [ctypes.c_void_p], c_fint
        f = int(c2f(h))
    if f == MPI.DATATYPE_NULL.py2f():
        raise TlmpiError(fn_name, MPI.ERR_TYPE, "returned MPI_DATATYPE_NULL (MPI not initialised?)")
    return f


def mpi_datatype(dtype):
    """The Fortran handle (MPI_Fint) tlmpi gets for arrays of this dtype (numpy/cupy dtype, typestr,
    torch dtype); float16 and bfloat16 map to tlmpi's own types (reducible on every MPI)."""
    kind = _kind_of(dtype)
    f = _dt_cache.get(kind)
    if f is None:
        if kind in _HALF:
            f = _half_f(_HALF[kind])
        else:
            MPI = _mpi()
            name = _MPI_NAMES.get(kind)
            t = getattr(MPI, name, None) if name else MPI._typedict.get(kind)
            if t is None or t == MPI.DATATYPE_NULL:
                raise TypeError("tlmpi_enqueue: no MPI datatype for element kind %r" % kind)
            f = t.py2f()
        _dt_cache[kind] = f
    return f


# --- buffers and streams ---------------------------------------------------------------------------
#
# A call's own work is kept small: how an argument is read is decided once per Python type (a torch
# tensor, a CuPy ndarray, anything else through __cuda_array_interface__), element kinds are cached per
# typestr / CuPy dtype, the Fortran handles of the default communicator and of the predefined
# operations named by None or a string once per process (predefined handles never change), and the
# library's entry points are bound once. Nothing of a buffer, a communicator object or a stream object
# is cached: the pointer, element count, contiguity, the communicator's handle (comm.py2f(), one C call)
# and the stream handle are read on every call.

class _Buf(object):
    __slots__ = ("ptr", "n", "kind", "origin", "obj")

    def __init__(self, ptr, n, kind, origin, obj):
        self.ptr, self.n, self.kind, self.origin, self.obj = ptr, n, kind, origin, obj


def _is_torch(obj):
    return type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "data_ptr")


def _itemsize(kind):
    if kind in _SIZES:
        return _SIZES[kind]
    digits = "".join(ch for ch in kind if ch.isdigit())
    if not digits:
        raise TypeError("tlmpi_enqueue: unknown element kind %r" % kind)
    return int(digits)


_TORCH, _CUPY, _CAI = 0, 1, 2
_readers = {}   # Python type -> (how its objects are read, origin), decided once per type
_ts_kinds = {}  # typestr ("<f4") -> (kind, itemsize), for the typestrs _kind_of and _itemsize accept
_cp_kinds = {}  # CuPy dtype -> kind, for the dtypes whose typestr _kind_of and _itemsize accept


def _reader(tp, obj):
    """How objects of type tp are read: torch (the tensor API), CuPy (an ndarray's own attributes,
    the same values its __cuda_array_interface__ has, without building that dict), else
    __cuda_array_interface__; and the origin that picks the default stream. Only decisions that
    depend on the type alone are kept."""
    mod = tp.__module__.split(".")[0]
    if mod == "torch" and hasattr(obj, "data_ptr"):
        r = (_TORCH, "torch")
        if not hasattr(tp, "data_ptr"):  # an instance attribute: decide again next time
            return r
    elif mod == "cupy" and all(hasattr(tp, a) for a in ("data", "size", "dtype", "flags")):
        r = (_CUPY, "cupy")
    else:
        r = (_CAI, mod if mod in ("cupy", "numba") else "cai")
        if mod == "torch":  # decided by the instance (no data_ptr): again next time
            return r
    _readers[tp] = r
    return r


def _ts_kind(ts):
    """(kind, itemsize) of a __cuda_array_interface__ typestr; raises as _kind_of / _itemsize do."""
    ki = _ts_kinds.get(ts) if type(ts) is str else None
    if ki is None:
        kind = _kind_of(ts)
        ki = (kind, _itemsize(kind))
        if type(ts) is str:
            _ts_kinds[ts] = ki
    return ki


def _buf_cai(obj, what, writable, origin):
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError("%s: %s has neither __cuda_array_interface__ nor the torch tensor API (a host array? "
                        "tlmpi's enqueue entry points take device buffers)" % (what, type(obj).__name__))
    if cai.get("mask") is not None:
        raise ValueError("%s: masked arrays are not supported" % what)
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise ValueError("%s: the array is read-only" % what)
    kind, isz = _ts_kind(cai["typestr"])
    shape = tuple(cai["shape"])
    n = 1
    for d in shape:
        n *= d
    strides = cai.get("strides")
    if strides is not None and n > 1:
        expect = isz
        for d, st in zip(reversed(shape), reversed(tuple(strides))):
            if d != 1 and st != expect:
                raise ValueError("%s: the array is not C-contiguous (strides %s)" % (what, tuple(strides)))
            expect *= d
    return ptr or 0, n, kind, origin


def _buf_torch(obj, what):
    if not obj.is_cuda:
        raise TypeError("%s: a CPU tensor (tlmpi's enqueue entry points take CUDA tensors)" % what)
    if not obj.is_contiguous():
        raise ValueError("%s: the tensor is not contiguous (call .contiguous())" % what)
    kind = _TORCH_KINDS.get(str(obj.dtype))
    if kind is None:
        raise TypeError("%s: torch dtype %s is not supported" % (what, obj.dtype))
    return obj.data_ptr(), obj.numel(), kind, "torch"


def _buf(obj, what, writable=False):
    """(pointer, element count, kind, origin) of a device array; C-contiguous only."""
    tp = type(obj)
    r = _readers.get(tp)
    if r is None:
        r = _reader(tp, obj)
    how = r[0]
    if how == _CUPY:
        # CuPy: what its __cuda_array_interface__ would say (data (ptr or 0 when empty, writable),
        # typestr dtype.str, strides None when C-contiguous); anything not C-contiguous goes through the
        # interface itself, so that its checks and messages apply
        if obj.flags.c_contiguous:
            dt = obj.dtype
            kind = _cp_kinds.get(dt)
            if kind is None:
                kind = _ts_kind(dt.str)[0]
                _cp_kinds[dt] = kind
            n = obj.size
            return (obj.data.ptr if n else 0), n, kind, "cupy"
        return _buf_cai(obj, what, writable, "cupy")
    if how == _TORCH:
        return _buf_torch(obj, what)
    return _buf_cai(obj, what, writable, r[1])


def _buffer(obj, what, writable=False):
    """Pointer, element count and kind of a device array (torch tensor API, else
    __cuda_array_interface__); C-contiguous only."""
    ptr, n, kind, origin = _buf(obj, what, writable)
    return _Buf(ptr, n, kind, origin, obj)


_cupy_current = None  # cupy.cuda.get_current_stream, once CuPy's default stream was asked for
_torch_mod = None


def _stream_of(stream, origin, obj):
    """cudaStream_t (an int) for a stream object, a raw pointer, or None: the default stream of the
    buffer obj (origin from _buf; see the module comment)."""
    global _cupy_current, _torch_mod
    if stream is None:
        if origin == "cupy":
            if _cupy_current is None:
                import cupy
                _cupy_current = cupy.cuda.get_current_stream
            return _cupy_current().ptr
        if origin == "torch":
            if _torch_mod is None:
                import torch
                _torch_mod = torch
            return _torch_mod.cuda.current_stream(obj.device).cuda_stream
        s = obj.__cuda_array_interface__.get("stream")  # CAI v3: 1 legacy, 2 per-thread, else a handle
        return int(s) if s else 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):  # the CUDA Python stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attr in ("ptr", "cuda_stream"):  # cupy Stream / ExternalStream; torch.cuda.Stream
        v = getattr(stream, attr, None)
        if v is not None:
            return int(v)
    h = getattr(stream, "handle", None)  # numba stream: a ctypes c_void_p
    if h is not None:
        return int(getattr(h, "value", h) or 0)
    raise TypeError("tlmpi_enqueue: cannot take a CUDA stream from %r" % (stream,))


def _stream_ptr(stream, bufs):
    """cudaStream_t (an int) for a stream object, a raw pointer, or None (see the module comment)."""
    if stream is None:
        return _stream_of(None, bufs[0].origin, bufs[0].obj)
    return _stream_of(stream, None, None)


def _same_kind(s, r, call):
    if s is not None and s.kind != r.kind:
        raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (call, s.kind, r.kind))


def _comm_size(comm):
    return (comm if comm is not None else _mpi().COMM_WORLD).Get_size()


_world_f = None  # MPI_COMM_WORLD's Fortran handle
_op_fs = {}      # None (MPI.SUM) and operation names ("sum", "MAX") -> the predefined operation's handle


def _comm_fh(comm):
    """_comm_f(comm) on the per-call path: COMM_WORLD's handle kept, any other communicator's read."""
    global _world_f
    if comm is None:
        if _world_f is None:
            _world_f = _mpi().COMM_WORLD.py2f()
        return _world_f
    return comm.py2f()


def _op_fh(op):
    """_op_f(op) on the per-call path: predefined operations named by None or a string kept, an Op
    object's handle read."""
    if op is None or type(op) is str:
        f = _op_fs.get(op)
        if f is None:
            f = _op_fs[op] = _op_f(op)
        return f
    return op.py2f()


def _dtype_fh(kind):
    f = _dt_cache.get(kind)
    return f if f is not None else mpi_datatype(kind)


def _entries():
    """(allreduce, allgather, reduce_scatter_block) ctypes entry points of the library."""
    global _fns
    lib = library()
    _fns = (lib.tlmpi_allreduce_enqueue_f, lib.tlmpi_allgather_enqueue_f, lib.tlmpi_reduce_scatter_block_enqueue_f)
    return _fns


_AGV, _RS, _BC, _RED, _A2A = ("tlmpi_allgatherv_enqueue_f", "tlmpi_reduce_scatter_enqueue_f", "tlmpi_bcast_enqueue_f",
                              "tlmpi_reduce_enqueue_f", "tlmpi_alltoall_enqueue_f")
_SIB = (_AGV, _RS, _BC, _RED, _A2A)


def _sib_entry(i):
    """The siblings' entry point i (_SIB) of the library, bound once per library; TlmpiError where the
    libtlmpi found predates them."""
    global _sfns
    lib = library()
    if _sfns is None or _sfns[0] is not lib:
        missing = [n for n in _SIB if not hasattr(lib, n)]
        if missing:
            ver = getattr(lib, "tlmpi_version", None)
            raise TlmpiError(missing[0], -1, "the libtlmpi found (%s, version %s) has no %s" % (
                _origin, ver().decode() if ver is not None else "?", ", ".join(missing)))
        _sfns = (lib,) + tuple(getattr(lib, n) for n in _SIB)
    return _sfns[1 + i]


# --- the optional C extension ----------------------------------------------------------------------
#
# _fast is _tlmpi_fast.Calls(globals()): it reads this module's caches (_readers, _ts_kinds, _cp_kinds,
# _TORCH_KINDS, _dt_cache, _op_fs, _world_f, _cupy_current, _torch_mod) and _fns, never fills them;
# a call that finds one of them not yet filled returns False and the Python code does that call, and
# fills it. Its .calls / .passed count the calls made in C / left to Python.

_FAST_API = 1
_fast = None      # the extension's Calls over this module, None when absent or off
_fast_why = ""    # why _fast is None
_fast_file = ""   # the extension's file
_fast_ar = _fast_ag = _fast_rsb = None  # its methods while in use (_fast_use)


def _fast_entries(fns):
    """The addresses of the C functions in fns (ctypes), for _tlmpi_fast; None where one is not a C
    function (a stub of Python callables)."""
    try:
        return tuple(ctypes.cast(f, ctypes.c_void_p).value for f in fns)
    except Exception:
        return None


def _fast_use(on):
    """Route the collectives through the extension (on, where it is loaded) or the Python code alone
    (what TLMPI_PY_FAST=0 gives; the bench and the tests compare both in one process)."""
    global _fast_ar, _fast_ag, _fast_rsb
    f = _fast if on else None
    _fast_ar, _fast_ag, _fast_rsb = (f.allreduce, f.allgather, f.reduce_scatter_block) if f else (None, None, None)


def _load_fast():
    """_tlmpi_fast beside this file (its name with one of this Python's extension suffixes), else on
    sys.path; None and _fast_why when absent, off (TLMPI_PY_FAST=0) or not of this module's API."""
    global _fast, _fast_why, _fast_file
    _fast, _fast_why, _fast_file = None, "", ""
    if os.environ.get("TLMPI_PY_FAST", "").strip() == "0":
        _fast_why = "TLMPI_PY_FAST=0"
    else:
        try:
            import importlib.machinery
            import importlib.util
            mod = None
            here = os.path.dirname(os.path.abspath(__file__))
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(here, "_tlmpi_fast" + suffix)
                if os.path.isfile(path):
                    spec = importlib.util.spec_from_file_location("_tlmpi_fast", path)
                    mod = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(mod)
                    break
            if mod is None:
                import _tlmpi_fast as mod
            if getattr(mod, "API", None) != _FAST_API:
                raise ImportError("%s has API %r, this module wants %d" % (getattr(mod, "__file__", "_tlmpi_fast"),
                                                                           getattr(mod, "API", None), _FAST_API))
            _fast, _fast_file = mod.Calls(globals()), getattr(mod, "__file__", "_tlmpi_fast")
        except Exception as e:  # ImportError (not built) or anything else: the Python code does every call
            _fast_why = "%s: %s" % (type(e).__name__, e)
    _fast_use(True)
    return _fast


# --- the collectives -------------------------------------------------------------------------------

_FLAGS = SYNC_FALLBACK | NO_MIXING


def _prepare_flags(flags, sync_fallback, no_mixing):
    """The flags word of prepare(): an int of the exported constants (a bool counts as 0 / 1, which is
    SYNC_FALLBACK, what a second positional True meant before flags existed), OR the keyword booleans.
    Anything else, or a bit that is not one of the constants, raises TlmpiError."""
    call = "tlmpi_enqueue_prepare_f"
    if not isinstance(flags, int):
        raise TlmpiError(call, -1, "flags must be an int of tlmpi_enqueue.SYNC_FALLBACK / NO_MIXING, not %r"
                         % (flags,))
    if flags & ~_FLAGS or flags < 0:
        raise TlmpiError(call, -1, "unknown flag bits 0x%x (known: SYNC_FALLBACK 0x%x, NO_MIXING 0x%x)"
                         % (flags & ~_FLAGS if flags >= 0 else flags, SYNC_FALLBACK, NO_MIXING))
    return int(flags) | (SYNC_FALLBACK if sync_fallback else 0) | (NO_MIXING if no_mixing else 0)


def prepare(comm=None, flags=0, sync_fallback=False, no_mixing=False):
    """Build comm's plan, pools and handles now (collective over comm; never during a capture) and
    set its flags, the same on every rank: flags is SYNC_FALLBACK | NO_MIXING (or 0); sync_fallback=True
    and no_mixing=True say the same. SYNC_FALLBACK lets tiers that cannot run stream-ordered (staging,
    the MPI) run the blocking form instead of failing; NO_MIXING promises that graph replays never
    overlap the communicator's uncaptured calls (no event nodes in the graph). A flags value that is
    not an int of those bits raises TlmpiError before anything is called."""
    f = _prepare_flags(flags, sync_fallback, no_mixing)
    _check(library().tlmpi_enqueue_prepare_f(_comm_f(comm), f), "tlmpi_enqueue_prepare_f")


_AR, _AG, _RSB = "tlmpi_allreduce_enqueue_f", "tlmpi_allgather_enqueue_f", "tlmpi_reduce_scatter_block_enqueue_f"


def allreduce(sendbuf, recvbuf, op=None, comm=None, stream=None):
    """MPI_Allreduce of recvbuf's element count on `stream` (sendbuf None or recvbuf itself: in place)."""
    if _fast_ar is not None and _fast_ar(sendbuf, recvbuf, op, comm, stream):
        return
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    if sendbuf is None or sendbuf is recvbuf:
        sp = None
    else:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_AR, sk, rk))
        if sn != rn:
            raise ValueError("%s: sendbuf has %d elements, recvbuf %d" % (_AR, sn, rn))
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    fn = (_fns or _entries())[0]
    rc = fn(sp, rp, rn, _dtype_fh(rk), _op_fh(op), _comm_fh(comm), st)
    if rc:
        _check(rc, _AR)


def allgather(sendbuf, recvbuf, comm=None, stream=None):
    """MPI_Allgather: every rank's sendbuf (n elements) into recvbuf (n * comm size); sendbuf None: in
    place (this rank's block already in recvbuf)."""
    if _fast_ag is not None and _fast_ag(sendbuf, recvbuf, comm, stream):
        return
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    if sendbuf is not None:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_AG, sk, rk))
    size = _comm_size(comm)
    if sendbuf is not None:
        n = sn
        if rn != n * size:
            raise ValueError("%s: recvbuf has %d elements, need sendbuf's %d x %d ranks" % (_AG, rn, n, size))
    else:
        sp = None
        if rn % size:
            raise ValueError("%s: in place, recvbuf's %d elements do not split into %d ranks" % (_AG, rn, size))
        n = rn // size
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    fn = (_fns or _entries())[1]
    rc = fn(sp, rp, n, _dtype_fh(rk), _comm_fh(comm), st)
    if rc:
        _check(rc, _AG)


def reduce_scatter_block(sendbuf, recvbuf, op=None, comm=None, stream=None):
    """MPI_Reduce_scatter_block: sendbuf (n * comm size elements) reduced, block `rank` into recvbuf
    (n); sendbuf None: in place (recvbuf holds the n * size input, the result lands in its first n)."""
    if _fast_rsb is not None and _fast_rsb(sendbuf, recvbuf, op, comm, stream):
        return
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    if sendbuf is not None:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_RSB, sk, rk))
    size = _comm_size(comm)
    if sendbuf is not None:
        n = rn
        if sn != n * size:
            raise ValueError("%s: sendbuf has %d elements, need recvbuf's %d x %d ranks" % (_RSB, sn, n, size))
    else:
        sp = None
        if rn % size:
            raise ValueError("%s: in place, recvbuf's %d elements do not split into %d ranks" % (_RSB, rn, size))
        n = rn // size
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    fn = (_fns or _entries())[2]
    rc = fn(sp, rp, n, _dtype_fh(rk), _op_fh(op), _comm_fh(comm), st)
    if rc:
        _check(rc, _RSB)


# --- the siblings (the Python code alone: the C extension does not serve them) -----------------------

def _int(v, what, call):
    """v as an int (its __index__: ints, numpy integers; a float or a bool raises TypeError)."""
    if type(v) is bool:
        raise TypeError("%s: %s must be an int, not bool" % (call, what))
    try:
        return v.__index__()
    except AttributeError:
        raise TypeError("%s: %s must be an int, not %s" % (call, what, type(v).__name__))


def _counts(v, size, what, call):
    """A sequence of `size` non-negative ints (elements per rank)."""
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        raise TypeError("%s: %s must be a sequence of ints, one per rank, not %s" % (call, what, type(v).__name__))
    if len(v) != size:
        raise ValueError("%s: %s has %d entries, the communicator %d ranks" % (call, what, len(v), size))
    out = [_int(x, what, call) for x in v]
    for i, x in enumerate(out):
        if x < 0:
            raise ValueError("%s: %s[%d] is negative (%d)" % (call, what, i, x))
    return out


def _i64s(v):
    return (ctypes.c_int64 * len(v))(*v)


def _root(root, size, call):
    r = _int(root, "root", call)
    if not 0 <= r < size:
        raise ValueError("%s: root %d is not a rank of the communicator (%d ranks)" % (call, r, size))
    return r


def _rank(comm):
    return (comm if comm is not None else _mpi().COMM_WORLD).Get_rank()


def allgatherv(sendbuf, recvbuf, counts, displs=None, comm=None, stream=None):
    """MPI_Allgatherv: rank i's block of counts[i] elements into recvbuf at displs[i] (elements; None:
    packed, the running sum of counts); sendbuf (counts[rank] elements) None: in place (this rank's
    block already at displs[rank] in recvbuf)."""
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    size, rank = _comm_size(comm), _rank(comm)
    cnt = _counts(counts, size, "counts", _AGV)
    if displs is None:
        dsp, at = [], 0
        for c in cnt:
            dsp.append(at)
            at += c
    else:
        dsp = _counts(displs, size, "displs", _AGV)
    need = max([d + c for c, d in zip(cnt, dsp) if c] or [0])
    if rn < need:
        raise ValueError("%s: recvbuf has %d elements, the blocks reach %d" % (_AGV, rn, need))
    if sendbuf is None:
        sp, sn = None, 0
    else:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_AGV, sk, rk))
        if sn != cnt[rank]:
            raise ValueError("%s: sendbuf has %d elements, counts[%d] is %d" % (_AGV, sn, rank, cnt[rank]))
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    rc = _sib_entry(0)(sp, sn, rp, _i64s(cnt), _i64s(dsp), _dtype_fh(rk), _comm_fh(comm), st)
    if rc:
        _check(rc, _AGV)


def reduce_scatter(sendbuf, recvbuf, counts, op=None, comm=None, stream=None):
    """MPI_Reduce_scatter: sendbuf (sum(counts) elements) reduced, block `rank` (counts[rank] elements,
    after the blocks of the lower ranks) into recvbuf (at least counts[rank]); sendbuf None: in place
    (recvbuf holds the sum(counts) input, the result lands in its first counts[rank])."""
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    size, rank = _comm_size(comm), _rank(comm)
    cnt = _counts(counts, size, "counts", _RS)
    total = sum(cnt)
    if sendbuf is None:
        sp = None
        if rn < total:
            raise ValueError("%s: in place, recvbuf has %d elements, the counts sum to %d" % (_RS, rn, total))
    else:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_RS, sk, rk))
        if sn != total:
            raise ValueError("%s: sendbuf has %d elements, the counts sum to %d" % (_RS, sn, total))
        if rn < cnt[rank]:
            raise ValueError("%s: recvbuf has %d elements, counts[%d] is %d" % (_RS, rn, rank, cnt[rank]))
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    rc = _sib_entry(1)(sp, rp, _i64s(cnt), _dtype_fh(rk), _op_fh(op), _comm_fh(comm), st)
    if rc:
        _check(rc, _RS)


def bcast(buf, root=0, comm=None, stream=None):
    """MPI_Bcast of buf's element count from rank `root` to every rank's buf."""
    p, n, k, o = _buf(buf, "buf", True)
    r = _root(root, _comm_size(comm), _BC)
    st = stream if type(stream) is int else _stream_of(stream, o, buf)
    rc = _sib_entry(2)(p, n, _dtype_fh(k), r, _comm_fh(comm), st)
    if rc:
        _check(rc, _BC)


def reduce(sendbuf, recvbuf, op=None, root=0, comm=None, stream=None):
    """MPI_Reduce of sendbuf's element count into recvbuf at rank `root` (recvbuf is read at the root
    only and may be None elsewhere); sendbuf None: in place at the root (recvbuf holds its input)."""
    r = _root(root, _comm_size(comm), _RED)
    at_root = _rank(comm) == r
    if at_root:
        if recvbuf is None:
            raise ValueError("%s: recvbuf is None at the root" % _RED)
        rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    else:
        rp = None
    if sendbuf is None:
        if not at_root:
            raise ValueError("%s: sendbuf None (in place) off the root" % _RED)
        sp, n, kind, o, obj = None, rn, rk, ro, recvbuf
    else:
        sp, n, kind, o = _buf(sendbuf, "sendbuf")
        obj = sendbuf
        if at_root:
            if kind != rk:
                raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_RED, kind, rk))
            if n != rn:
                raise ValueError("%s: sendbuf has %d elements, recvbuf %d" % (_RED, n, rn))
            o, obj = ro, recvbuf
    st = stream if type(stream) is int else _stream_of(stream, o, obj)
    rc = _sib_entry(3)(sp, rp, n, _dtype_fh(kind), _op_fh(op), r, _comm_fh(comm), st)
    if rc:
        _check(rc, _RED)


def alltoall(sendbuf, recvbuf, comm=None, stream=None):
    """MPI_Alltoall: recvbuf's element count split evenly over the ranks, block q of sendbuf (as large
    as recvbuf) to rank q; sendbuf None: in place (recvbuf's blocks sent, then replaced)."""
    rp, rn, rk, ro = _buf(recvbuf, "recvbuf", True)
    size = _comm_size(comm)
    if rn % size:
        raise ValueError("%s: recvbuf's %d elements do not split into %d ranks" % (_A2A, rn, size))
    if sendbuf is None:
        sp = None
    else:
        sp, sn, sk, _ = _buf(sendbuf, "sendbuf")
        if sk != rk:
            raise TypeError("%s: sendbuf (%s) and recvbuf (%s) differ in element type" % (_A2A, sk, rk))
        if sn != rn:
            raise ValueError("%s: sendbuf has %d elements, recvbuf %d" % (_A2A, sn, rn))
    st = stream if type(stream) is int else _stream_of(stream, ro, recvbuf)
    rc = _sib_entry(4)(sp, rp, rn // size, _dtype_fh(rk), _comm_fh(comm), st)
    if rc:
        _check(rc, _A2A)


# --- statistics ------------------------------------------------------------------------------------

class _Stat(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]


def form_stats():
    """This process's nonzero counters per (collective, path, form), e.g. ("allreduce", "node",
    "capture"): (calls, bytes); capture counts once per captured call, not per replay."""
    lib = library()
    for fn in ("tlmpi_coll_name", "tlmpi_path_name", "tlmpi_form_name"):
        getattr(lib, fn).argtypes, getattr(lib, fn).restype = [ctypes.c_int], ctypes.c_char_p
    lib.tlmpi_get_form_stats.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Stat)]
    lib.tlmpi_get_form_stats.restype = ctypes.c_int
    out, st = {}, _Stat()

    def names(fn):
        i, res = 0, []
        while True:
            v = fn(i)
            if v is None:
                return res
            res.append(v.decode())
            i += 1
    for c, cn in enumerate(names(lib.tlmpi_coll_name)):
        for p, pn in enumerate(names(lib.tlmpi_path_name)):
            for f, fname in enumerate(names(lib.tlmpi_form_name)):
                if lib.tlmpi_get_form_stats(c, p, f, ctypes.byref(st)) == 0 and st.calls:
                    out[(cn, pn, fname)] = (st.calls, st.bytes)
    return out


_load_fast()

if __name__ == "__main__":
    sys.stdout.write("tlmpi_enqueue: %s, extension _tlmpi_fast: %s\n" % (library_origin() + ", libtlmpi " + version(),
                     "loaded" if _fast is not None else "not used (%s)" % _fast_why))
