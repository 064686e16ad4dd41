# graph_step.py: a training-step-like sequence of tlmpi's stream-ordered collectives captured once
# in a CUDA graph (cupy.cuda.Graph, or torch.cuda.CUDAGraph with --framework torch) and replayed with
# new input each time, every result checked on every rank against a numpy reference.
#
#   mpiexec -n 2 -x LD_PRELOAD=/path/to/libtlmpi.so python3 graph_step.py        (Open MPI)
#   mpiexec -n 2 -genv LD_PRELOAD /path/to/libtlmpi.so python3 graph_step.py     (MPICH)
#
# One step: gradient buckets of several sizes (8 B .. 16 MiB of float32 and a float16 bucket) are
# computed by a kernel (g = 2 x) and allreduced (the first out of place, the rest in place); a
# gradient is scaled (3 z) and reduce_scatter_block'ed into this rank's shard; the shard updates the
# parameter shard (p + shard) and the parameters are allgathered. The step runs once eagerly (stream
# ordered, not captured: also warms the kernels), is captured (capture mode global by default, the
# strictest: any allocation, synchronisation or legacy-stream work in it invalidates the capture),
# then replayed --replays times with new inputs written before each replay, each checked, then
# --bench times back to back. Prints one line per rank (PASS/FAIL, the median device time of a
# checked replay, the back-to-back time per replay, the tlmpi paths and forms that ran), then
# "graph_step: PASS|FAIL (N ranks)"; exit 0 only if every rank passed.
# Finds tlmpi_enqueue.py in the directory above this one (python/ in the source tree,
# $(datadir)/tlmpi/python installed) or on PYTHONPATH.
import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ap = argparse.ArgumentParser(description="a training-step-like sequence of tlmpi's stream-ordered collectives "
                             "captured in a CUDA graph and replayed, every replay checked")
ap.add_argument("--framework", choices=("cupy", "torch"), default="cupy")
ap.add_argument("--replays", type=int, default=20, help="checked replays, new input each (default 20)")
ap.add_argument("--bench", type=int, default=100, help="back-to-back replays timed at the end (default 100)")
ap.add_argument("--buckets", default="2,1024,65539,1048576,4194304",
                help="float32 gradient bucket sizes in elements (default 8 B, 4 KiB, 256 KiB+12 B, 4 MiB, 16 MiB)")
ap.add_argument("--half", type=int, default=4099, help="elements of the float16 bucket (0: none)")
ap.add_argument("--shard", type=int, default=65541, help="parameter shard elements per rank (float32)")
ap.add_argument("--capture-mode", choices=("global", "thread_local", "relaxed"), default="global")
ap.add_argument("--no-mixing", action="store_true", help="prepare(no_mixing=True): no event nodes in the graph")
ap.add_argument("--thread-level", choices=("single", "funneled", "serialized", "multiple"),
                help="mpi4py.rc.thread_level (default: mpi4py's, multiple)")
args = ap.parse_args()

import mpi4py  # noqa: E402

if args.thread_level:
    mpi4py.rc.thread_level = args.thread_level  # before MPI_Init, which "from mpi4py import MPI" calls
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import tlmpi_enqueue as te  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
local = comm.Split_type(MPI.COMM_TYPE_SHARED)
lrank = local.Get_rank()
buckets = [(int(n), np.float32) for n in args.buckets.split(",") if n]
if args.half > 0:
    buckets.append((args.half, np.float16))
nsh = args.shard


def human(nbytes):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= f and nbytes % f == 0:
            return "%d %s" % (nbytes // f, unit)
    return "%d B" % nbytes


# --- the frameworks: arrays, a stream, kernels, capture and replay ----------------------------------

class Cupy(object):
    def __init__(self):
        import cupy
        self.cp = cupy
        cupy.cuda.Device(lrank % cupy.cuda.runtime.getDeviceCount()).use()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.graph = None

    def empty(self, n, dt):
        return self.cp.empty(n, dtype=dt)

    def upload(self, dst, host):
        dst.set(host, stream=self.stream)

    def download(self, src):
        return src.get(stream=self.stream)

    def ctx(self):
        return self.stream  # "with" makes it the current stream (tlmpi_enqueue's stream=None)

    def mul(self, src, factor, out):
        self.cp.multiply(src, factor, out=out)

    def add(self, a, b, out):
        self.cp.add(a, b, out=out)

    def sync(self):
        self.stream.synchronize()

    def capture(self, step):
        rt = self.cp.cuda.runtime
        mode = {"global": rt.streamCaptureModeGlobal, "thread_local": rt.streamCaptureModeThreadLocal,
                "relaxed": rt.streamCaptureModeRelaxed}[args.capture_mode]
        with self.stream:
            self.stream.begin_capture(mode)
            try:
                step()
            finally:
                self.graph = self.stream.end_capture()  # raises if the capture was invalidated

    def replay(self):
        self.graph.launch(stream=self.stream)

    def event(self):
        e = self.cp.cuda.Event()
        e.record(self.stream)
        return e

    def elapsed_us(self, e0, e1):
        e1.synchronize()
        return self.cp.cuda.get_elapsed_time(e0, e1) * 1e3

    def drop_graph(self):
        self.graph = None


class Torch(object):
    def __init__(self):
        import torch
        self.t = torch
        torch.cuda.set_device(lrank % torch.cuda.device_count())
        self.stream = torch.cuda.Stream()
        self.graph = None
        self.dt = {np.float32: torch.float32, np.float16: torch.float16}

    def empty(self, n, dt):
        return self.t.empty(n, dtype=self.dt[dt], device="cuda")

    def upload(self, dst, host):
        with self.t.cuda.stream(self.stream):
            dst.copy_(self.t.from_numpy(host))

    def download(self, src):
        with self.t.cuda.stream(self.stream):
            return src.cpu().numpy()

    def ctx(self):
        return self.t.cuda.stream(self.stream)

    def mul(self, src, factor, out):
        self.t.mul(src, factor, out=out)

    def add(self, a, b, out):
        self.t.add(a, b, out=out)

    def sync(self):
        self.stream.synchronize()

    def capture(self, step):
        self.graph = self.t.cuda.CUDAGraph()
        with self.t.cuda.graph(self.graph, stream=self.stream, capture_error_mode=args.capture_mode):
            step()

    def replay(self):
        with self.t.cuda.stream(self.stream):
            self.graph.replay()

    def event(self):
        e = self.t.cuda.Event(enable_timing=True)
        e.record(self.stream)
        return e

    def elapsed_us(self, e0, e1):
        e1.synchronize()
        return e0.elapsed_time(e1) * 1e3

    def drop_graph(self):
        self.graph = None


# --- inputs, the step, the reference ----------------------------------------------------------------

idx = np.arange(max([n for n, _ in buckets] + [nsh * size]), dtype=np.int64)


def val(q, r, salt, n):
    """Rank q's input number salt of replay r: small integers, so every sum is exact (also in float16)."""
    return ((idx[:n] * 7 + q * 13 + r * 5 + salt * 3) % 17) - 8


class Step(object):
    def __init__(self, fw):
        self.fw = fw
        self.x = [fw.empty(n, dt) for n, dt in buckets]            # the step's inputs
        self.g = [fw.empty(n, dt) for n, dt in buckets]            # gradients, reduced in place ...
        self.ar0 = fw.empty(buckets[0][0], buckets[0][1])          # ... except bucket 0: out of place
        self.z = fw.empty(nsh * size, np.float32)
        self.z3 = fw.empty(nsh * size, np.float32)
        self.shard = fw.empty(nsh, np.float32)
        self.p = fw.empty(nsh, np.float32)
        self.pnew = fw.empty(nsh, np.float32)
        self.pfull = fw.empty(nsh * size, np.float32)

    def write_inputs(self, r):
        for b, (n, dt) in enumerate(buckets):
            self.fw.upload(self.x[b], val(rank, r, b, n).astype(dt))
        self.fw.upload(self.z, val(rank, r, 100, nsh * size).astype(np.float32))
        self.fw.upload(self.p, val(rank, r, 200, nsh).astype(np.float32))

    def run(self):
        """The step, on the current stream (tlmpi_enqueue's stream=None takes it)."""
        fw = self.fw
        for b in range(len(buckets)):
            fw.mul(self.x[b], 2, self.g[b])
            if b == 0:
                te.allreduce(self.g[b], self.ar0, MPI.SUM, comm)
            else:
                te.allreduce(None, self.g[b], MPI.SUM, comm)
        fw.mul(self.z, 3, self.z3)
        te.reduce_scatter_block(self.z3, self.shard, MPI.SUM, comm)
        fw.add(self.p, self.shard, self.pnew)
        te.allgather(self.pnew, self.pfull, comm)

    def check(self, r):
        """Mismatch descriptions of replay r's results (empty: all exact)."""
        bad = []

        def cmp(name, got, want):
            if got.shape != want.shape or not np.array_equal(got, want):
                k = int(np.argmax(got != want)) if got.shape == want.shape else -1
                bad.append("%s: element %d is %s, expected %s" % (name, k, got[k] if k >= 0 else got.shape,
                                                                   want[k] if k >= 0 else want.shape))
        for b, (n, dt) in enumerate(buckets):
            want = (2 * sum(val(q, r, b, n) for q in range(size))).astype(dt)
            cmp("allreduce bucket %d (%s)" % (b, human(n * np.dtype(dt).itemsize)),
                self.fw.download(self.ar0 if b == 0 else self.g[b]), want)
        s100 = sum(val(q, r, 100, nsh * size) for q in range(size))
        cmp("reduce_scatter_block", self.fw.download(self.shard), (3 * s100[rank * nsh:(rank + 1) * nsh]).astype(np.float32))
        pall = np.concatenate([val(q, r, 200, nsh) for q in range(size)])
        cmp("allgather", self.fw.download(self.pfull), (pall + 3 * s100).astype(np.float32))
        return bad


def main():
    fw = Cupy() if args.framework == "cupy" else Torch()
    st = Step(fw)
    te.prepare(comm, no_mixing=args.no_mixing)
    checked = 0
    # 1. eager: stream-ordered calls outside any capture (warms the framework's kernels too)
    with fw.ctx():
        st.write_inputs(0)
        st.run()
    fw.sync()
    bad = st.check(0)
    if bad:
        return "eager step: " + "; ".join(bad[:3]), None, None
    checked += 1
    # 2. capture once
    comm.Barrier()
    fw.capture(st.run)
    # 3. replays, new input before each, every one checked
    times = []
    for r in range(1, args.replays + 1):
        with fw.ctx():
            st.write_inputs(r)
            e0 = fw.event()
            fw.replay()
            e1 = fw.event()
        times.append(fw.elapsed_us(e0, e1))
        fw.sync()
        bad = st.check(r)
        if bad:
            return "replay %d of %d: %s" % (r, args.replays, "; ".join(bad[:3])), None, None
        checked += 1
    # 4. back to back, the last input unchanged (each replay recomputes the gradients from it, so the
    #    results stay those of that input: checked once more at the end)
    comm.Barrier()
    t0 = time.perf_counter()
    with fw.ctx():
        for _ in range(args.bench):
            fw.replay()
    fw.sync()
    b2b = (time.perf_counter() - t0) / max(args.bench, 1) * 1e6
    bad = st.check(args.replays)
    if bad:
        return "after %d back-to-back replays: %s" % (args.bench, "; ".join(bad[:3])), None, None
    fw.drop_graph()
    times.sort()
    return None, (times[len(times) // 2] if times else float("nan")), (b2b, checked)


def stats_text():
    try:
        st = te.form_stats()
    except Exception as e:
        return "stats: %s" % e
    parts = ["%s %s/%s %d" % (c, p, f, n) for (c, p, f), (n, _b) in sorted(st.items()) if f in ("enqueue", "capture")]
    return "; ".join(parts) if parts else "no enqueue/capture counted"


try:
    err, med, extra = main()
except Exception as e:  # a TlmpiError, a CUDA error (invalidated capture), ...
    err, med, extra = "%s: %s" % (type(e).__name__, e), None, None
    if os.environ.get("GRAPH_STEP_TRACEBACK"):
        traceback.print_exc()
desc = "%s, capture %s, %s; buckets %s%s; shard %s" % (
    args.framework, args.capture_mode, "no mixing" if args.no_mixing else "mixing",
    ",".join(human(n * np.dtype(dt).itemsize) for n, dt in buckets if dt == np.float32),
    " + f16 %s" % human(args.half * 2) if args.half > 0 else "", human(nsh * 4))
if err is None:
    line = ("graph_step rank %d/%d: PASS (%s): 1 eager step + %d replays checked; replay %.1f us (median device "
            "time), %.1f us back to back (%d replays, checked after); %s" % (rank, size, desc, extra[1] - 1, med,
                                                                           extra[0], args.bench, stats_text()))
else:
    line = "graph_step rank %d/%d: FAIL (%s): %s" % (rank, size, desc, err)
lines = comm.gather(line, root=0)
ok = comm.allreduce(0 if err is None else 1) == 0
if rank == 0:
    for ln in lines:
        print(ln)
    print("graph_step: %s (%d ranks)" % ("PASS" if ok else "FAIL", size))
    sys.stdout.flush()
sys.exit(0 if ok else 1)
