# python_percall.py: the per-call cost of an eager stream-ordered collective from Python
# (python/tlmpi_enqueue.py through mpi4py + CuPy), in the shape of node_bench's enqueue rows (section
# "graph", bench/node_bench.c): per repetition, after a barrier, K back-to-back te.allreduce calls of
# 8 bytes (2 float32, MPI.SUM, out of place) on one non-blocking CuPy stream, then one wait polling
# the stream (cudaStreamQuery, as node_bench's spin_wait); per call = the item's time / K; printed:
# the median over the repetitions of the mean over ranks, and of the slowest rank. Rows:
#   enqueue         te.allreduce(s, r, MPI.SUM, comm, stream=st): the arguments node_bench's C call has
#   enqueue-defaults te.allreduce(s, r) inside `with st:` (op, communicator and stream from the defaults)
# and where the time of a row goes, the host's side of it (the same K calls; no GPU wait in the time):
#   host            enqueue's K calls timed before the wait: the host's cost per call (a row above it
#                   by more than the GPU's per-call time means the GPU is starved, not busy)
#   args            the module's Python work of one call alone (both buffers read, the stream, handles)
#   zero            the library's entry point through ctypes with count 0 (its checks, no launch)
# so that enqueue's host cost = args + ctypes and the entry's checks (zero) + the launch itself.
# Where the module loaded its C extension (_tlmpi_fast: beside tlmpi_enqueue.py once installed, else
# on PYTHONPATH, e.g. a build tree's python/), enqueue, enqueue-defaults and host come twice, in the
# same run, interleaved: "-ext" through the extension and "-py" through the Python path alone (what
# TLMPI_PY_FAST=0 gives: te._fast_use(False) around the row); a line before the rows says whether the
# extension is loaded and how many of the -ext rows' calls it made itself (all of them, normally).
# Without it (or with TLMPI_PY_FAST=0) the rows are the Python path's, named as before.
# and the path and form tlmpi counted for them (te.form_stats(): node/enqueue where the node tier ran).
# One validated call first (exact sums of small integers). Rank 0 prints one line per row:
#   python_percall: np=2 bytes=8 K=200 reps=21 thread=single enqueue-ext: T us per call (slowest rank T), path node/enqueue
#
# The C row to compare with, in the same device call, on the same GPU, under the same MPS daemon:
# node_bench's "allreduce | 8 | 200 | enqueue" row of
#   bench/node_bench -S graph -G 8 -K 200          (TLMPI_TIER=node there: set the same here)
# e.g. from a CUDA build BUILD (tests/gpu/build.sh) and this source tree, for 2 and 8 ranks on one GPU:
#   sh tests/gpu/mps.sh sh -c 'for np in 2 8; do
#       sh tests/gpu/mpirun.sh $np BUILD/bench/node_bench -S graph -G 8 -K 200 -r 21;
#       sh tests/gpu/mpirun.sh $np env TLMPI_TIER=node LD_PRELOAD=BUILD/.libs/libtlmpi.so \
#           python3 bench/python_percall.py -K 200 -r 21; done'
# (tests/gpu/mpirun.sh: Open MPI or MPICH, --oversubscribe --bind-to none under Open MPI; MPIEXEC
# names the launcher.) The Python row minus the C row is the module's own per-call cost.
#
# Options: -K N back-to-back calls (200), -r N repetitions (21), -w N warm-up items (5), --thread-level
# (mpi4py.rc.thread_level; default single, the level of node_bench's MPI_Init: tlmpi sizes its node
# kernels differently under MPI_THREAD_MULTIPLE, mpi4py's own default), --module DIR (where
# tlmpi_enqueue.py is; default: ../python beside this file, else PYTHONPATH).
# --stub: no GPU, no libtlmpi, one process: the Python side alone. A stand-in library whose entry
# points return 0 at once (compiled with cc into a temporary directory), a fake CuPy (ndarray, Stream)
# put in sys.modules, the real mpi4py (handles) where it imports; prints the same rows with "stub".
#   PYTHONPATH=BUILD/python python3 bench/python_percall.py --stub [-K 200 -r 21]
# Exit 77 (skip) without mpi4py, CuPy or a CUDA device (--stub: without mpi4py or cc).
import argparse
import os
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser(description="per-call cost of eager te.allreduce from Python (node_bench's enqueue shape)")
ap.add_argument("-K", type=int, default=200, help="back-to-back calls per item (default 200)")
ap.add_argument("-r", type=int, default=21, help="repetitions (default 21)")
ap.add_argument("-w", type=int, default=5, help="warm-up items (default 5)")
ap.add_argument("--module", help="directory of tlmpi_enqueue.py (default: ../python beside this file)")
ap.add_argument("--thread-level", default="single", choices=("single", "funneled", "serialized", "multiple"),
                help="mpi4py.rc.thread_level (default single: node_bench's MPI_Init; mpi4py's own default is multiple)")
ap.add_argument("--stub", action="store_true", help="no GPU, no libtlmpi: the Python side alone")
args = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
moddir = args.module or os.path.join(os.path.dirname(here), "python")
if os.path.exists(os.path.join(moddir, "tlmpi_enqueue.py")):
    sys.path.insert(0, moddir)


def skip(why):
    sys.stdout.write("python_percall: SKIP: %s\n" % why)
    sys.exit(77)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


# --- the stand-ins of --stub -----------------------------------------------------------------------

STUB_C = r"""
#include <stdint.h>
int tlmpi_enqueue_prepare_f(int c, int f) { (void)c; (void)f; return 0; }
int tlmpi_allreduce_enqueue_f(void *s, void *r, int64_t n, int t, int o, int c, void *st)
{ (void)s; (void)r; (void)n; (void)t; (void)o; (void)c; (void)st; return 0; }
int tlmpi_allgather_enqueue_f(void *s, void *r, int64_t n, int t, int c, void *st)
{ (void)s; (void)r; (void)n; (void)t; (void)c; (void)st; return 0; }
int tlmpi_reduce_scatter_block_enqueue_f(void *s, void *r, int64_t n, int t, int o, int c, void *st)
{ (void)s; (void)r; (void)n; (void)t; (void)o; (void)c; (void)st; return 0; }
const char *tlmpi_enqueue_error(void) { return "stub"; }
const char *tlmpi_version(void) { return "stub"; }
"""


def stub_library():
    d = tempfile.mkdtemp(prefix="python_percall.")
    src, lib = os.path.join(d, "stub.c"), os.path.join(d, "libtlmpi_stub.so")
    with open(src, "w") as f:
        f.write(STUB_C)
    cc = os.environ.get("CC_STUB", "cc")
    try:
        subprocess.check_call([cc, "-O2", "-shared", "-fPIC", "-o", lib, src])
    except (OSError, subprocess.CalledProcessError) as e:
        skip("--stub: cannot compile the stand-in library with %s: %s" % (cc, e))
    os.environ["TLMPI_LIBRARY"] = lib
    return d


def fake_cupy():
    """A module "cupy" with what the module and this bench touch: ndarray (data.ptr, size, dtype, flags,
    strides, a __cuda_array_interface__ built per access as CuPy's is) and Stream (ptr, done)."""
    import types
    cp = types.ModuleType("cupy")

    class Dtype(object):
        def __init__(self, name, ts):
            self.name, self.str, self.itemsize = name, ts, int(ts[2:])

        def __str__(self):
            return self.name

        @property
        def descr(self):  # numpy builds this list in Python on every access
            return [("", self.str)]

    class Mem(object):
        __slots__ = ("ptr",)

        def __init__(self, ptr):
            self.ptr = ptr

    class Flags(object):
        __slots__ = ("c_contiguous", "f_contiguous", "owndata")

        def __init__(self, c, f, o):
            self.c_contiguous, self.f_contiguous, self.owndata = c, f, o

    class Stream(object):
        null = None

        def __init__(self, non_blocking=False, ptr=0x5000):
            self.ptr = ptr

        @property
        def done(self):
            return True

        def __enter__(self):
            cp._current.append(self)
            return self

        def __exit__(self, *a):
            cp._current.pop()

    class ndarray(object):
        __slots__ = ("data", "size", "dtype", "shape", "strides")  # attributes of the type, as CuPy's

        def __init__(self, n, ptr, dtype):
            self.data, self.size, self.dtype, self.shape = Mem(ptr), n, dtype, (n,)
            self.strides = (dtype.itemsize,)

        @property
        def flags(self):
            return Flags(True, True, True)

        @property
        def __cuda_array_interface__(self):
            desc = {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr}
            desc["stream"] = get_current_stream().ptr or 1
            desc["version"] = 3
            desc["strides"] = None
            desc["data"] = (self.data.ptr if self.size else 0, False)
            return desc

    def get_current_stream():
        return cp._current[-1]

    cp._current = [Stream(ptr=0)]
    cp.ndarray, cp.float32 = ndarray, Dtype("float32", "<f4")
    cp.cuda = types.SimpleNamespace(Stream=Stream, get_current_stream=get_current_stream)
    ndarray.__module__ = "cupy"
    sys.modules["cupy"] = cp
    return cp


# --- the bench -------------------------------------------------------------------------------------

try:
    import mpi4py
    mpi4py.rc.thread_level = args.thread_level
    from mpi4py import MPI
except ImportError as e:
    skip("no mpi4py (%s)" % e)
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
tmp = None
if args.stub:
    tmp = stub_library()
    cp = fake_cupy()
    xs, xr = cp.ndarray(2, 0x10000, cp.float32), cp.ndarray(2, 0x20000, cp.float32)
    st = cp.cuda.Stream(non_blocking=True, ptr=0x7000)
else:
    try:
        import cupy as cp
        ndev = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        skip("no CuPy with a CUDA device (%s: %s)" % (type(e).__name__, e))
    if ndev < 1:
        skip("no CUDA device")
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    cp.cuda.Device(local.Get_rank() % ndev).use()
    local.Free()
    st = cp.cuda.Stream(non_blocking=True)
    xs, xr = cp.zeros(2, dtype=cp.float32), cp.zeros(2, dtype=cp.float32)

import tlmpi_enqueue as te  # noqa: E402

try:
    te.library()
except (OSError, te.TlmpiError) as e:
    skip("libtlmpi with the stream-ordered entry points not found: %s" % e)
te.prepare(comm)


def wait():
    while not st.done:
        pass


def item_explicit(K):
    ar, s, r, op, c, stream = te.allreduce, xs, xr, MPI.SUM, comm, st
    for _ in range(K):
        ar(s, r, op, c, stream=stream)
    wait()


def item_defaults(K):
    ar, s, r = te.allreduce, xs, xr
    with st:
        for _ in range(K):
            ar(s, r)
    wait()


def counted():
    if args.stub:
        return {}
    return dict((k, v[0]) for k, v in te.form_stats().items() if k[0] == "allreduce")


def served(before, after):
    d = sorted((after[k] - before.get(k, 0), k) for k in after if after[k] != before.get(k, 0))
    return ",".join("%s/%s" % (k[1], k[2]) for _, k in reversed(d)) or "none counted"


# one validated call: exact sums of small integers (through the extension and the Python path)
for on in ((True, False) if te._fast is not None else (True,)):
    if args.stub:
        break
    te._fast_use(on)
    xs[...] = cp.arange(2, dtype=cp.float32) + rank
    xr.fill(-1)
    cp.cuda.Device().synchronize()
    te.allreduce(xs, xr, MPI.SUM, comm, stream=st)
    st.synchronize()
    te._fast_use(True)
    got = [float(v) for v in cp.asnumpy(xr)]
    want = [float(sum(i + q for q in range(size))) for i in range(2)]
    bad = comm.allreduce(0 if got == want else 1)
    if bad:
        if rank == 0:
            sys.stdout.write("python_percall: FAIL: allreduce result %s, expected %s (%d ranks wrong%s)\n"
                             % (got, want, bad, "" if te._fast is None else ", extension " + ("on" if on else "off")))
        sys.exit(1)

def item_host(K):
    """item_explicit's K calls timed without the wait: the host's cost per call"""
    ar, s, r, op, c, stream = te.allreduce, xs, xr, MPI.SUM, comm, st
    t0 = time.perf_counter()
    for _ in range(K):
        ar(s, r, op, c, stream=stream)
    t = time.perf_counter() - t0
    wait()
    return t


def item_args(K):
    """the module's Python work of one te.allreduce (buffers, stream, handles), no C call"""
    buf, so, dt, opf, cf, s, r, op, c, stream = te._buf, te._stream_of, te._dtype_fh, te._op_fh, te._comm_fh, xs, xr, \
        MPI.SUM, comm, st
    t0 = time.perf_counter()
    for _ in range(K):
        rp, rn, rk, ro = buf(r, "recvbuf", True)
        buf(s, "sendbuf")
        so(stream, ro, r)
        dt(rk), opf(op), cf(c)
    return time.perf_counter() - t0


def item_zero(K):
    """the ctypes entry point with count 0 (its checks, no launch) on the same arguments"""
    fn = (te._fns or te._entries())[0]
    sp, rp, dtf, opf, cf = xs.data.ptr, xr.data.ptr, te._dtype_fh("f4"), MPI.SUM.py2f(), comm.py2f()
    sptr = te._stream_of(st, None, None)
    t0 = time.perf_counter()
    for _ in range(K):
        fn(sp, rp, 0, dtf, opf, cf, sptr)
    return time.perf_counter() - t0


def python_path(fn):
    """fn with the module's Python path alone (te._fast_use(False): what TLMPI_PY_FAST=0 gives)"""
    def item(K):
        te._fast_use(False)
        try:
            return fn(K)
        finally:
            te._fast_use(True)
    return item


ext = te._fast is not None
if ext:
    rows = (("enqueue-ext", item_explicit), ("enqueue-py", python_path(item_explicit)),
            ("enqueue-defaults-ext", item_defaults), ("enqueue-defaults-py", python_path(item_defaults)),
            ("host-ext", item_host), ("host-py", python_path(item_host)), ("args", item_args), ("zero", item_zero))
    ext_calls = dict((name, 0) for name, _ in rows if name.endswith("-ext"))
else:
    rows = (("enqueue", item_explicit), ("enqueue-defaults", item_defaults), ("host", item_host), ("args", item_args),
            ("zero", item_zero))
avg = dict((name, []) for name, _ in rows)
slow = dict((name, []) for name, _ in rows)
path = {}
for name, fn in rows:
    for _ in range(args.w):
        fn(args.K)
    b = counted()
    fn(args.K)
    path[name] = served(b, counted())
for rep in range(args.r):
    order = rows if rep % 2 == 0 else tuple(reversed(rows))
    for name, fn in order:
        comm.Barrier()
        c0 = te._fast.calls if ext else 0
        t0 = time.perf_counter()
        t = fn(args.K)
        us = ((time.perf_counter() - t0) if t is None else t) / args.K * 1e6
        if ext and name in ext_calls:
            ext_calls[name] += te._fast.calls - c0
        tot = comm.allreduce(us, op=MPI.SUM)
        mx = comm.allreduce(us, op=MPI.MAX)
        avg[name].append(tot / size)
        slow[name].append(mx)
if ext:
    made = comm.allreduce(sum(ext_calls.values()), op=MPI.MIN)
    want = len(ext_calls) * args.K * args.r
if rank == 0:
    if ext:
        sys.stdout.write("python_percall: extension _tlmpi_fast loaded (%s): it made %d of the -ext rows' %d calls "
                         "on the slowest rank%s\n" % (te._fast_file, made, want,
                                                      "" if made == want else " (the rest went through Python)"))
    else:
        sys.stdout.write("python_percall: no C extension (%s): the Python path's rows\n" % te._fast_why)
    for name, _ in rows:
        sys.stdout.write("python_percall: np=%d bytes=8 K=%d reps=%d thread=%s %s%s: %.2f us per call (slowest rank "
                         "%.2f), path %s\n" % (size, args.K, args.r, args.thread_level, name, " stub" if args.stub else "",
                                               median(avg[name]), median(slow[name]),
                                               "stub" if args.stub else path[name]))
    sys.stdout.flush()
if tmp:
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)
