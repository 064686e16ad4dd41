# python_flags: tlmpi_enqueue.prepare()'s flags (python/tlmpi_enqueue.py) without MPI, a GPU or libtlmpi:
# the library and the communicator conversion are stubbed, and the flags word each call would hand to
# tlmpi_enqueue_prepare_f is checked: the exported constants positionally and by keyword, the keyword
# booleans, both OR'ed, a bool (True: SYNC_FALLBACK, what a second positional True meant before), and
# wrong types or unknown bits raising TlmpiError without calling the library.
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", "."), "python"))
import tlmpi_enqueue as te  # noqa: E402

calls = []


class Stub:
    def tlmpi_enqueue_prepare_f(self, comm, flags):
        calls.append(flags)
        return 0


te.library = lambda: Stub()
te._comm_f = lambda comm: 0
fails = 0
checks = 0


def expect(args, kwargs, want):
    global fails, checks
    checks += 1
    del calls[:]
    try:
        te.prepare(None, *args, **kwargs)
        got = calls[0] if calls else "not called"
    except te.TlmpiError as e:
        got = "TlmpiError" if not calls else "TlmpiError after the call"
    except Exception as e:  # any other exception is a failure too
        got = "%s: %s" % (type(e).__name__, e)
    if got != want:
        fails += 1
        print("FAIL: prepare(None, *%r, **%r): %r, expected %r" % (args, kwargs, got, want))


expect((), {}, 0)
expect((te.NO_MIXING,), {}, te.NO_MIXING)
expect((te.SYNC_FALLBACK,), {}, te.SYNC_FALLBACK)
expect((te.SYNC_FALLBACK | te.NO_MIXING,), {}, 3)
expect((), {"flags": te.NO_MIXING}, te.NO_MIXING)
expect((), {"no_mixing": True}, te.NO_MIXING)
expect((), {"sync_fallback": True}, te.SYNC_FALLBACK)
expect((te.NO_MIXING,), {"sync_fallback": True}, 3)
expect((True,), {}, te.SYNC_FALLBACK)
expect((False,), {}, 0)
expect((4,), {}, "TlmpiError")
expect((te.NO_MIXING | 8,), {}, "TlmpiError")
expect((-1,), {}, "TlmpiError")
expect(("2",), {}, "TlmpiError")
expect((2.0,), {}, "TlmpiError")
expect((None,), {}, "TlmpiError")
print("python_flags: %s: %d checks, %d failures" % ("PASS" if fails == 0 else "FAIL", checks, fails))
sys.exit(1 if fails else 0)
