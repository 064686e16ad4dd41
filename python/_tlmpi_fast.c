/*
 * _tlmpi_fast.c: the optional CPython extension of python/tlmpi_enqueue.py. One object of its type
 * Calls, made by the module from its own globals, does the per-call work of te.allreduce,
 * te.allgather and te.reduce_scatter_block in C: it reads each buffer the way the module's _buf does
 * (a torch tensor's API, a CuPy ndarray's attributes, else __cuda_array_interface__: pointer, element
 * count, element kind, C-contiguity, writability), makes the same checks (element kinds alike, counts
 * that fit the communicator's size), takes the stream as _stream_of does (an int, __cuda_stream__,
 * .ptr, .cuda_stream, .handle; None: the current stream of CuPy or torch, or the interface's "stream"
 * entry), the datatype / op / communicator handles from the module's caches or py2f(), and calls the
 * library's entry point (tlmpi_*_enqueue_f, its address taken from the module's ctypes function) with
 * the GIL released, as ctypes does. A nonzero return goes to the module's _check (TlmpiError).
 *
 * Each method returns True when it made the call and False when the module's Python path is to do
 * the call instead: whenever a cache entry the module fills on first use is still missing (a new
 * type, typestr, dtype, op name, COMM_WORLD's handle, the entry points), whenever an argument is
 * anything but the plain case (a check that fails, an attribute that raises an Exception, a value
 * of another type than the module's path would take as it is), and where the module's entry points
 * are not C functions. The extension never raises an argument error itself: the Python path reads
 * the arguments again and raises its own TypeError / ValueError, so the messages are the module's.
 * Nothing of an argument is kept between calls (as in the module): only the module's caches of
 * per-type decisions and handles are read. No MPI and no CUDA headers: pointers and MPI_Fint handles
 * pass through as integers. tests/unit/python_fast.py runs every argument case through both paths.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define TLMPI_FAST_API 1 /* the module uses the extension only when its API is this one */

/* the entry points (include/tlmpi.h; MPI_Fint is a C int, as c_fint in the module) */
typedef int (*op_entry)(const void *sendbuf, void *recvbuf, int64_t count, int datatype, int op, int comm,
                        void *stream); /* allreduce, reduce_scatter_block */
typedef int (*nop_entry)(const void *sendbuf, void *recvbuf, int64_t count, int datatype, int comm,
                         void *stream); /* allgather */

enum { ENTRY_AR, ENTRY_AG, ENTRY_RSB, NENTRY };
enum { HOW_TORCH = 0, HOW_CUPY = 1, HOW_CAI = 2 }; /* tlmpi_enqueue's _TORCH, _CUPY, _CAI */
enum { ORIGIN_CAI, ORIGIN_CUPY, ORIGIN_TORCH };    /* where the default stream comes from */

/* names, interned once */
enum {
    S_CAI, S_MASK, S_DATA, S_TYPESTR, S_SHAPE, S_STRIDES, S_STREAM, S_FLAGS, S_C_CONTIGUOUS, S_DTYPE, S_SIZE,
    S_PTR, S_IS_CUDA, S_IS_CONTIGUOUS, S_DATA_PTR, S_NUMEL, S_DEVICE, S_CUDA, S_CURRENT_STREAM, S_CUDA_STREAM,
    S_CUDA_STREAM_PROTO, S_HANDLE, S_VALUE, S_PY2F, S_GET_SIZE, S_MPI4PY, S_MPI, S_COMM_WORLD, S_G_FNS,
    S_G_FAST_ENTRIES, S_G_CHECK, S_G_WORLD_F, S_G_CUPY_CURRENT, S_G_TORCH_MOD, S_G_READERS, S_G_TS_KINDS,
    S_G_CP_KINDS, S_G_DT_CACHE, S_G_OP_FS, S_G_TORCH_KINDS, S_AR, S_AG, S_RSB, S_CUPY, S_TORCH, NSTR
};
static const char *const str_text[NSTR] = {
    "__cuda_array_interface__", "mask", "data", "typestr", "shape", "strides", "stream", "flags",
    "c_contiguous", "dtype", "size", "ptr", "is_cuda", "is_contiguous", "data_ptr", "numel", "device", "cuda",
    "current_stream", "cuda_stream", "__cuda_stream__", "handle", "value", "py2f", "Get_size", "mpi4py", "MPI",
    "COMM_WORLD", "_fns", "_fast_entries", "_check", "_world_f", "_cupy_current", "_torch_mod", "_readers",
    "_ts_kinds", "_cp_kinds", "_dt_cache", "_op_fs", "_TORCH_KINDS", "tlmpi_allreduce_enqueue_f",
    "tlmpi_allgather_enqueue_f", "tlmpi_reduce_scatter_block_enqueue_f", "cupy", "torch",
};
static PyObject *str[NSTR];
static PyObject *one; /* the int 1: __cuda_stream__()[1] */

/* the module's globals and caches the calls read */
typedef struct {
    PyObject_HEAD
    PyObject *g;                                                               /* tlmpi_enqueue's globals() */
    PyObject *readers, *ts_kinds, *cp_kinds, *dt_cache, *op_fs, *torch_kinds; /* its caches (dicts) */
    PyObject *fns;            /* the module's _fns tuple that addr was taken from (NULL: none yet) */
    void *addr[NENTRY];       /* its C functions; usable 0 where they are not (a stub of Python callables) */
    int usable;
    unsigned long long calls; /* entry points called here */
    unsigned long long passed; /* calls left to the Python path */
} Calls;

/* one buffer as the module's _buf reads it */
typedef struct {
    uintptr_t ptr;
    int64_t n;
    PyObject *kind; /* the element kind ("f4"), a reference */
    int origin;
    PyObject *cai;  /* its __cuda_array_interface__ where read (a reference), for the "stream" entry */
} buf_t;

static void buf_clear(buf_t *b)
{
    Py_CLEAR(b->kind);
    Py_CLEAR(b->cai);
}

/* The convention of every reader below: 1 done, 0 the Python path is to do the call (no exception
 * set), -1 an exception that must propagate. soft(): an exception raised while reading an argument
 * becomes 0 (the Python path reads it again and raises the same), unless it is no Exception
 * (KeyboardInterrupt, SystemExit). */
static int soft(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* getattr(o, name, None) of Python: 1 and a reference in *res, 0 when o has no such attribute */
static int getattr_opt(PyObject *o, PyObject *name, PyObject **res)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(o, name, res);
#else
    return _PyObject_LookupAttr(o, name, res);
#endif
}

/* an attribute that must be there: 1 and a reference, else 0 / -1 as soft() */
static int getattr_req(PyObject *o, PyObject *name, PyObject **res)
{
    *res = PyObject_GetAttr(o, name);
    return *res ? 1 : soft();
}

static int call_method(PyObject *o, PyObject *name, PyObject **res)
{
    *res = PyObject_CallMethodObjArgs(o, name, NULL);
    return *res ? 1 : soft();
}

/* a borrowed dict item: 1 found, 0 absent (or an error soft() takes) */
static int dict_get(PyObject *d, PyObject *key, PyObject **res)
{
    *res = PyDict_GetItemWithError(d, key);
    if (*res)
        return 1;
    return PyErr_Occurred() ? soft() : 0;
}

static int truth(PyObject *v, int *t)
{
    *t = PyObject_IsTrue(v);
    return *t < 0 ? soft() : 1;
}

/* what ctypes' c_void_p passes for an int (masked to the pointer's width) or None (NULL); 0 for any
 * other value (ctypes would raise: the Python path does) */
static int ptr_of(PyObject *v, uintptr_t *out)
{
    unsigned long long x;
    if (v == Py_None) {
        *out = 0;
        return 1;
    }
    if (!PyLong_Check(v))
        return 0;
    x = PyLong_AsUnsignedLongLongMask(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return soft();
    *out = (uintptr_t)x;
    return 1;
}

/* int(v) as a pointer (the module's int(...) of a stream handle) */
static int intptr_of(PyObject *v, uintptr_t *out)
{
    int k;
    PyObject *i = PyNumber_Long(v);
    if (!i)
        return soft();
    k = ptr_of(i, out);
    Py_DECREF(i);
    return k;
}

/* what ctypes' c_int (MPI_Fint) passes for an int: its low bits */
static int fint_of(PyObject *v, int *out)
{
    unsigned long x;
    if (!PyLong_Check(v))
        return 0;
    x = PyLong_AsUnsignedLongMask(v);
    if (x == (unsigned long)-1 && PyErr_Occurred())
        return soft();
    *out = (int)(unsigned int)x;
    return 1;
}

/* a count or a dimension: an int from 0 to INT64_MAX; 0 for anything else (negative, too large: the
 * Python path's own arithmetic) */
static int count_of(PyObject *v, int64_t *out)
{
    int ovf;
    long long x;
    if (!PyLong_Check(v))
        return 0;
    x = PyLong_AsLongLongAndOverflow(v, &ovf);
    if (x == -1 && PyErr_Occurred())
        return soft();
    if (ovf || x < 0)
        return 0;
    *out = (int64_t)x;
    return 1;
}

static int mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* a plain tuple or list (what tuple(x) of the module takes as it is) */
static int seq_of(PyObject *v, PyObject ***items, Py_ssize_t *len)
{
    if (PyTuple_CheckExact(v)) {
        *items = &PyTuple_GET_ITEM(v, 0);
        *len = PyTuple_GET_SIZE(v);
        return 1;
    }
    if (PyList_CheckExact(v)) {
        *items = PySequence_Fast_ITEMS(v);
        *len = PyList_GET_SIZE(v);
        return 1;
    }
    return 0;
}

/* _buf_cai: __cuda_array_interface__ (a plain dict), its data, typestr (the module's _ts_kinds),
 * shape and strides (C-contiguous or None); read-only refused for the receive buffer */
static int read_cai(Calls *c, PyObject *obj, int writable, int origin, buf_t *b)
{
    PyObject *cai, *v, **data, **shape, **strides, *ki;
    Py_ssize_t nd, ns, i;
    int64_t n = 1, d, st, expect, isz;
    int k, t;

    if ((k = getattr_opt(obj, str[S_CAI], &cai)) <= 0)
        return k < 0 ? soft() : 0;
    b->cai = cai;
    if (!PyDict_CheckExact(cai))
        return 0;
    if ((k = dict_get(cai, str[S_MASK], &v)) < 0 || (k == 1 && v != Py_None))
        return k < 0 ? k : 0;
    if ((k = dict_get(cai, str[S_DATA], &v)) <= 0)
        return k;
    if (!seq_of(v, &data, &ns) || ns != 2)
        return 0;
    if ((k = ptr_of(data[0], &b->ptr)) <= 0) /* "ptr or 0": None is NULL, as ctypes makes it */
        return k;
    if (writable) { /* truth of the read-only flag: held while its __bool__ may run */
        Py_INCREF(v);
        k = truth(data[1], &t);
        Py_DECREF(v);
        if (k <= 0)
            return k;
        if (t)
            return 0; /* read-only */
    }
    if ((k = dict_get(cai, str[S_TYPESTR], &v)) <= 0)
        return k;
    if (!PyUnicode_CheckExact(v))
        return 0; /* the module keeps the kinds of str typestrs only */
    if ((k = dict_get(c->ts_kinds, v, &ki)) <= 0)
        return k;
    if (!PyTuple_CheckExact(ki) || PyTuple_GET_SIZE(ki) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(ki, 0)) ||
        (k = count_of(PyTuple_GET_ITEM(ki, 1), &isz)) <= 0)
        return 0;
    b->kind = PyTuple_GET_ITEM(ki, 0);
    Py_INCREF(b->kind);
    if ((k = dict_get(cai, str[S_SHAPE], &v)) <= 0)
        return k;
    if (!seq_of(v, &shape, &nd))
        return 0;
    for (i = 0; i < nd; i++)
        if ((k = count_of(shape[i], &d)) <= 0 || !mul_ok(n, d, &n))
            return k < 0 ? k : 0;
    if ((k = dict_get(cai, str[S_STRIDES], &v)) < 0)
        return k;
    if (k == 1 && v != Py_None && n > 1) {
        if (!seq_of(v, &strides, &ns))
            return 0;
        expect = isz;
        for (i = 1; i <= nd && i <= ns; i++) { /* zip(reversed(shape), reversed(strides)) */
            if ((k = count_of(shape[nd - i], &d)) <= 0)
                return k;
            if (!PyLong_Check(strides[ns - i]))
                return 0;
            if (d != 1) {
                int ovf;
                st = PyLong_AsLongLongAndOverflow(strides[ns - i], &ovf);
                if (st == -1 && PyErr_Occurred())
                    return soft();
                if (ovf || st != expect)
                    return 0; /* not C-contiguous */
            }
            if (!mul_ok(expect, d, &expect))
                return 0;
        }
    }
    b->n = n;
    b->origin = origin;
    return 1;
}

/* the CuPy path of _buf: flags.c_contiguous, dtype (the module's _cp_kinds), size, data.ptr; not
 * C-contiguous: through __cuda_array_interface__ */
static int read_cupy(Calls *c, PyObject *obj, int writable, buf_t *b)
{
    PyObject *flags, *v, *dt, *kind, *mem;
    int k, t;

    if ((k = getattr_req(obj, str[S_FLAGS], &flags)) <= 0)
        return k;
    k = getattr_req(flags, str[S_C_CONTIGUOUS], &v);
    Py_DECREF(flags);
    if (k <= 0)
        return k;
    k = truth(v, &t);
    Py_DECREF(v);
    if (k <= 0)
        return k;
    if (!t)
        return read_cai(c, obj, writable, ORIGIN_CUPY, b);
    if ((k = getattr_req(obj, str[S_DTYPE], &dt)) <= 0)
        return k;
    k = dict_get(c->cp_kinds, dt, &kind);
    Py_DECREF(dt);
    if (k <= 0)
        return k;
    if (!PyUnicode_Check(kind))
        return 0;
    b->kind = kind;
    Py_INCREF(kind);
    if ((k = getattr_req(obj, str[S_SIZE], &v)) <= 0)
        return k;
    k = count_of(v, &b->n);
    Py_DECREF(v);
    if (k <= 0)
        return k;
    b->ptr = 0;
    if (b->n) {
        if ((k = getattr_req(obj, str[S_DATA], &mem)) <= 0)
            return k;
        k = getattr_req(mem, str[S_PTR], &v);
        Py_DECREF(mem);
        if (k <= 0)
            return k;
        k = ptr_of(v, &b->ptr);
        Py_DECREF(v);
        if (k <= 0)
            return k;
    }
    b->origin = ORIGIN_CUPY;
    return 1;
}

/* _buf_torch: is_cuda, is_contiguous(), str(dtype) (the module's _TORCH_KINDS), data_ptr(), numel() */
static int read_torch(Calls *c, PyObject *obj, buf_t *b)
{
    PyObject *v, *s, *kind;
    int k, t;

    if ((k = getattr_req(obj, str[S_IS_CUDA], &v)) <= 0)
        return k;
    k = truth(v, &t);
    Py_DECREF(v);
    if (k <= 0 || !t)
        return k <= 0 ? k : 0;
    if ((k = call_method(obj, str[S_IS_CONTIGUOUS], &v)) <= 0)
        return k;
    k = truth(v, &t);
    Py_DECREF(v);
    if (k <= 0 || !t)
        return k <= 0 ? k : 0;
    if ((k = getattr_req(obj, str[S_DTYPE], &v)) <= 0)
        return k;
    s = PyObject_Str(v);
    Py_DECREF(v);
    if (!s)
        return soft();
    k = dict_get(c->torch_kinds, s, &kind);
    Py_DECREF(s);
    if (k <= 0)
        return k;
    if (!PyUnicode_Check(kind))
        return 0;
    b->kind = kind;
    Py_INCREF(kind);
    if ((k = call_method(obj, str[S_DATA_PTR], &v)) <= 0)
        return k;
    k = ptr_of(v, &b->ptr);
    Py_DECREF(v);
    if (k <= 0)
        return k;
    if ((k = call_method(obj, str[S_NUMEL], &v)) <= 0)
        return k;
    k = count_of(v, &b->n);
    Py_DECREF(v);
    if (k <= 0)
        return k;
    b->origin = ORIGIN_TORCH;
    return 1;
}

/* _buf: how objects of this type are read, as the module decided it (its _readers; a type not there
 * yet is the Python path's to decide) */
static int read_buf(Calls *c, PyObject *obj, int writable, buf_t *b)
{
    PyObject *r, *o;
    long how;
    int k, origin;

    if ((k = dict_get(c->readers, (PyObject *)Py_TYPE(obj), &r)) <= 0)
        return k;
    if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 2 || !PyLong_CheckExact(PyTuple_GET_ITEM(r, 0)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(r, 1)))
        return 0;
    how = PyLong_AsLong(PyTuple_GET_ITEM(r, 0));
    o = PyTuple_GET_ITEM(r, 1);
    /* the module's literals are interned as these names are: mostly the same object */
    origin = o == str[S_CUPY] || PyUnicode_Compare(o, str[S_CUPY]) == 0     ? ORIGIN_CUPY
             : o == str[S_TORCH] || PyUnicode_Compare(o, str[S_TORCH]) == 0 ? ORIGIN_TORCH
                                                                           : ORIGIN_CAI;
    switch (how) {
    case HOW_CUPY:
        return read_cupy(c, obj, writable, b);
    case HOW_TORCH:
        return read_torch(c, obj, b);
    case HOW_CAI:
        return read_cai(c, obj, writable, origin, b);
    default:
        return 0;
    }
}

/* _stream_of(stream, origin of the receive buffer, the receive buffer) */
static int stream_of(Calls *c, PyObject *stream, const buf_t *rb, PyObject *recvbuf, uintptr_t *out)
{
    PyObject *v, *f, *s, *h;
    int k, t;
    const int attrs[2] = {S_PTR, S_CUDA_STREAM};

    if (PyLong_Check(stream))
        return ptr_of(stream, out);
    if (stream == Py_None) {
        switch (rb->origin) {
        case ORIGIN_CUPY: /* cupy.cuda.get_current_stream().ptr, once the module has the function */
            if ((k = dict_get(c->g, str[S_G_CUPY_CURRENT], &f)) <= 0 || f == Py_None)
                return k < 0 ? k : 0;
            Py_INCREF(f);
            s = PyObject_CallObject(f, NULL);
            Py_DECREF(f);
            if (!s)
                return soft();
            k = getattr_req(s, str[S_PTR], &v);
            Py_DECREF(s);
            if (k <= 0)
                return k;
            k = ptr_of(v, out);
            Py_DECREF(v);
            return k;
        case ORIGIN_TORCH: /* torch.cuda.current_stream(recvbuf.device).cuda_stream */
            if ((k = dict_get(c->g, str[S_G_TORCH_MOD], &f)) <= 0 || f == Py_None)
                return k < 0 ? k : 0;
            Py_INCREF(f);
            k = getattr_req(f, str[S_CUDA], &v);
            Py_DECREF(f);
            if (k <= 0)
                return k;
            k = getattr_req(v, str[S_CURRENT_STREAM], &f);
            Py_DECREF(v);
            if (k <= 0)
                return k;
            if ((k = getattr_req(recvbuf, str[S_DEVICE], &v)) <= 0) {
                Py_DECREF(f);
                return k;
            }
            s = PyObject_CallFunctionObjArgs(f, v, NULL);
            Py_DECREF(f);
            Py_DECREF(v);
            if (!s)
                return soft();
            k = getattr_req(s, str[S_CUDA_STREAM], &v);
            Py_DECREF(s);
            if (k <= 0)
                return k;
            k = ptr_of(v, out);
            Py_DECREF(v);
            return k;
        default: /* the interface's "stream": int(s) if s else 0 (the dict read for the buffer) */
            if (!rb->cai)
                return 0;
            if ((k = dict_get(rb->cai, str[S_STREAM], &v)) < 0)
                return k;
            if (k == 0) {
                *out = 0;
                return 1;
            }
            Py_INCREF(v);
            if ((k = truth(v, &t)) > 0) {
                if (t)
                    k = intptr_of(v, out);
                else
                    *out = 0;
            }
            Py_DECREF(v);
            return k;
        }
    }
    /* the CUDA Python stream protocol: int(stream.__cuda_stream__()[1]) */
    if ((k = getattr_opt(stream, str[S_CUDA_STREAM_PROTO], &f)) < 0)
        return soft();
    if (k) {
        s = PyObject_CallObject(f, NULL);
        Py_DECREF(f);
        if (!s)
            return soft();
        v = PyObject_GetItem(s, one);
        Py_DECREF(s);
        if (!v)
            return soft();
        k = intptr_of(v, out);
        Py_DECREF(v);
        return k;
    }
    for (t = 0; t < 2; t++) { /* .ptr (CuPy), .cuda_stream (torch) */
        if ((k = getattr_opt(stream, str[attrs[t]], &v)) < 0)
            return soft();
        if (k && v != Py_None) {
            k = intptr_of(v, out);
            Py_DECREF(v);
            return k;
        }
        Py_XDECREF(v);
    }
    /* .handle (Numba: a ctypes c_void_p): int(getattr(h, "value", h) or 0) */
    if ((k = getattr_opt(stream, str[S_HANDLE], &h)) < 0)
        return soft();
    if (!k)
        return 0; /* no stream: the Python path's TypeError */
    if (h == Py_None) {
        Py_DECREF(h);
        return 0;
    }
    if ((k = getattr_opt(h, str[S_VALUE], &v)) < 0) {
        Py_DECREF(h);
        return soft();
    }
    if (k)
        Py_DECREF(h);
    else
        v = h;
    if ((k = truth(v, &t)) > 0) {
        if (t)
            k = intptr_of(v, out);
        else
            *out = 0;
    }
    Py_DECREF(v);
    return k;
}

/* the receive buffer's datatype handle: the module's _dt_cache (filled by mpi_datatype on first use) */
static int dtype_of(Calls *c, const buf_t *rb, int *out)
{
    PyObject *v;
    int k = dict_get(c->dt_cache, rb->kind, &v);
    return k <= 0 ? k : fint_of(v, out);
}

/* _op_fh: None or a name from the module's _op_fs, else op.py2f() */
static int op_of(Calls *c, PyObject *op, int *out)
{
    PyObject *v;
    int k;
    if (op == Py_None || PyUnicode_CheckExact(op)) {
        k = dict_get(c->op_fs, op, &v);
        return k <= 0 ? k : fint_of(v, out);
    }
    if ((k = call_method(op, str[S_PY2F], &v)) <= 0)
        return k;
    k = fint_of(v, out);
    Py_DECREF(v);
    return k;
}

/* _comm_fh: None is the module's _world_f (once it has it), else comm.py2f() */
static int comm_of(Calls *c, PyObject *comm, int *out)
{
    PyObject *v;
    int k;
    if (comm == Py_None) {
        k = dict_get(c->g, str[S_G_WORLD_F], &v);
        return k <= 0 ? k : fint_of(v, out);
    }
    if ((k = call_method(comm, str[S_PY2F], &v)) <= 0)
        return k;
    k = fint_of(v, out);
    Py_DECREF(v);
    return k;
}

/* _comm_size: comm.Get_size(), None: mpi4py's COMM_WORLD (where mpi4py.MPI is imported); 1 or more */
static int size_of(PyObject *comm, int64_t *out)
{
    PyObject *m, *mpi = NULL, *v;
    int k;
    if (comm == Py_None) {
        if ((k = dict_get(PyImport_GetModuleDict(), str[S_MPI4PY], &m)) <= 0)
            return k;
        Py_INCREF(m);
        k = getattr_req(m, str[S_MPI], &mpi);
        Py_DECREF(m);
        if (k <= 0)
            return k;
        k = getattr_req(mpi, str[S_COMM_WORLD], &comm);
        Py_DECREF(mpi);
        if (k <= 0)
            return k;
    } else {
        Py_INCREF(comm);
    }
    k = call_method(comm, str[S_GET_SIZE], &v);
    Py_DECREF(comm);
    if (k <= 0)
        return k;
    k = count_of(v, out);
    Py_DECREF(v);
    return k > 0 && *out == 0 ? 0 : k;
}

/* the library's entry point i, from the module's _fns: their addresses are taken (the module's
 * _fast_entries) whenever _fns is another tuple than last time; None before the module's first call */
static int entry(Calls *c, int i, void **fn)
{
    PyObject *fns, *f, *a;
    int k, j;

    if ((k = dict_get(c->g, str[S_G_FNS], &fns)) <= 0 || fns == Py_None)
        return k < 0 ? k : 0;
    if (fns != c->fns) {
        if ((k = dict_get(c->g, str[S_G_FAST_ENTRIES], &f)) <= 0)
            return k;
        Py_INCREF(fns);
        Py_INCREF(f);
        a = PyObject_CallFunctionObjArgs(f, fns, NULL);
        Py_DECREF(f);
        if (!a) {
            Py_DECREF(fns);
            return -1;
        }
        Py_XSETREF(c->fns, fns);
        c->usable = 0;
        if (PyTuple_CheckExact(a) && PyTuple_GET_SIZE(a) == NENTRY) {
            c->usable = 1;
            for (j = 0; j < NENTRY; j++) {
                uintptr_t p = 0;
                if ((k = ptr_of(PyTuple_GET_ITEM(a, j), &p)) < 0) {
                    c->usable = 0;
                    Py_DECREF(a);
                    return -1;
                }
                if (k == 0 || !p)
                    c->usable = 0;
                c->addr[j] = (void *)p;
            }
        }
        Py_DECREF(a);
    }
    if (!c->usable)
        return 0;
    *fn = c->addr[i];
    return 1;
}

static int same_kind(const buf_t *s, const buf_t *r)
{
    int eq;
    if (s->kind == r->kind)
        return 1;
    eq = PyObject_RichCompareBool(s->kind, r->kind, Py_EQ);
    return eq < 0 ? soft() : eq;
}

/* after the call: a nonzero return raises the module's TlmpiError through its _check(rc, call) */
static int finish(Calls *c, int rc, int name)
{
    PyObject *chk, *code, *res;
    int k;
    if (rc == 0)
        return 1;
    if ((k = dict_get(c->g, str[S_G_CHECK], &chk)) <= 0) {
        if (k == 0)
            PyErr_Format(PyExc_RuntimeError, "%U: error class %d (tlmpi_enqueue has no _check)", str[name], rc);
        return -1;
    }
    if (!(code = PyLong_FromLong(rc)))
        return -1;
    Py_INCREF(chk);
    res = PyObject_CallFunctionObjArgs(chk, code, str[name], NULL);
    Py_DECREF(chk);
    Py_DECREF(code);
    if (!res)
        return -1;
    Py_DECREF(res);
    return 1;
}

static PyObject *result(Calls *c, int k)
{
    if (k < 0)
        return NULL;
    if (k > 0)
        Py_RETURN_TRUE;
    c->passed++;
    Py_RETURN_FALSE;
}

static int nargs_ok(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs == want)
        return 1;
    PyErr_Format(PyExc_TypeError, "Calls.%s takes %zd positional arguments (%zd given)", name, want, nargs);
    return 0;
}

#define BUF_INIT {0, 0, NULL, ORIGIN_CAI, NULL}

/* allreduce(sendbuf, recvbuf, op, comm, stream) -> True (called) / False (the Python path's) */
static PyObject *calls_allreduce(Calls *c, PyObject *const *args, Py_ssize_t nargs)
{
    buf_t rb = BUF_INIT, sb = BUF_INIT;
    void *fn = NULL;
    uintptr_t st = 0;
    int k, rc, dt = 0, op = 0, cm = 0, inplace;

    if (!nargs_ok(nargs, 5, "allreduce"))
        return NULL;
    inplace = args[0] == Py_None || args[0] == args[1];
    if ((k = entry(c, ENTRY_AR, &fn)) <= 0 || (k = read_buf(c, args[1], 1, &rb)) <= 0)
        goto out;
    if (!inplace) {
        if ((k = read_buf(c, args[0], 0, &sb)) <= 0 || (k = same_kind(&sb, &rb)) <= 0)
            goto out;
        if (sb.n != rb.n) {
            k = 0;
            goto out;
        }
    }
    if ((k = stream_of(c, args[4], &rb, args[1], &st)) <= 0 || (k = dtype_of(c, &rb, &dt)) <= 0 ||
        (k = op_of(c, args[2], &op)) <= 0 || (k = comm_of(c, args[3], &cm)) <= 0)
        goto out;
    Py_BEGIN_ALLOW_THREADS
    rc = ((op_entry)fn)(inplace ? NULL : (const void *)sb.ptr, (void *)rb.ptr, rb.n, dt, op, cm, (void *)st);
    Py_END_ALLOW_THREADS
    c->calls++;
    k = finish(c, rc, S_AR);
out:
    buf_clear(&rb);
    buf_clear(&sb);
    return result(c, k);
}

/* The per-rank count n of an allgather (one: sendbuf, all: recvbuf) or a reduce_scatter_block (one:
 * recvbuf, all: sendbuf), where `all` holds n for every one of size ranks; in place recvbuf rb splits
 * into the size blocks. 1, or 0 when the counts do not fit (the Python code raises). */
static int block_n(const buf_t *one, const buf_t *all, const buf_t *rb, int inplace, int64_t size, int64_t *n)
{
    int64_t want = 0;

    if (inplace) {
        if (rb->n % size)
            return 0;
        *n = rb->n / size;
        return 1;
    }
    *n = one->n;
    return mul_ok(*n, size, &want) && all->n == want;
}

/* allgather(sendbuf, recvbuf, comm, stream) -> True / False */
static PyObject *calls_allgather(Calls *c, PyObject *const *args, Py_ssize_t nargs)
{
    buf_t rb = BUF_INIT, sb = BUF_INIT;
    void *fn = NULL;
    uintptr_t st = 0;
    int64_t size = 1, n = 0;
    int k, rc, dt = 0, cm = 0, inplace;

    if (!nargs_ok(nargs, 4, "allgather"))
        return NULL;
    inplace = args[0] == Py_None;
    if ((k = entry(c, ENTRY_AG, &fn)) <= 0 || (k = read_buf(c, args[1], 1, &rb)) <= 0)
        goto out;
    if (!inplace && ((k = read_buf(c, args[0], 0, &sb)) <= 0 || (k = same_kind(&sb, &rb)) <= 0))
        goto out;
    if ((k = size_of(args[2], &size)) <= 0)
        goto out;
    if ((k = block_n(&sb, &rb, &rb, inplace, size, &n)) <= 0) /* recvbuf holds sendbuf's n from every rank */
        goto out;
    if ((k = stream_of(c, args[3], &rb, args[1], &st)) <= 0 || (k = dtype_of(c, &rb, &dt)) <= 0 ||
        (k = comm_of(c, args[2], &cm)) <= 0)
        goto out;
    Py_BEGIN_ALLOW_THREADS
    rc = ((nop_entry)fn)(inplace ? NULL : (const void *)sb.ptr, (void *)rb.ptr, n, dt, cm, (void *)st);
    Py_END_ALLOW_THREADS
    c->calls++;
    k = finish(c, rc, S_AG);
out:
    buf_clear(&rb);
    buf_clear(&sb);
    return result(c, k);
}

/* reduce_scatter_block(sendbuf, recvbuf, op, comm, stream) -> True / False */
static PyObject *calls_reduce_scatter_block(Calls *c, PyObject *const *args, Py_ssize_t nargs)
{
    buf_t rb = BUF_INIT, sb = BUF_INIT;
    void *fn = NULL;
    uintptr_t st = 0;
    int64_t size = 1, n = 0;
    int k, rc, dt = 0, op = 0, cm = 0, inplace;

    if (!nargs_ok(nargs, 5, "reduce_scatter_block"))
        return NULL;
    inplace = args[0] == Py_None;
    if ((k = entry(c, ENTRY_RSB, &fn)) <= 0 || (k = read_buf(c, args[1], 1, &rb)) <= 0)
        goto out;
    if (!inplace && ((k = read_buf(c, args[0], 0, &sb)) <= 0 || (k = same_kind(&sb, &rb)) <= 0))
        goto out;
    if ((k = size_of(args[3], &size)) <= 0)
        goto out;
    if ((k = block_n(&rb, &sb, &rb, inplace, size, &n)) <= 0) /* sendbuf holds recvbuf's n for every rank */
        goto out;
    if ((k = stream_of(c, args[4], &rb, args[1], &st)) <= 0 || (k = dtype_of(c, &rb, &dt)) <= 0 ||
        (k = op_of(c, args[2], &op)) <= 0 || (k = comm_of(c, args[3], &cm)) <= 0)
        goto out;
    Py_BEGIN_ALLOW_THREADS
    rc = ((op_entry)fn)(inplace ? NULL : (const void *)sb.ptr, (void *)rb.ptr, n, dt, op, cm, (void *)st);
    Py_END_ALLOW_THREADS
    c->calls++;
    k = finish(c, rc, S_RSB);
out:
    buf_clear(&rb);
    buf_clear(&sb);
    return result(c, k);
}

/* --- the type ---------------------------------------------------------------------------------- */

static int cache_of(PyObject *g, int name, PyObject **out)
{
    PyObject *d = PyDict_GetItemWithError(g, str[name]);
    if (!d || !PyDict_Check(d)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "Calls(globals): %U is not a dict there", str[name]);
        return 0;
    }
    Py_INCREF(d);
    *out = d;
    return 1;
}

static PyObject *calls_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *g;
    Calls *c;
    if (!PyArg_ParseTuple(args, "O!:Calls", &PyDict_Type, &g))
        return NULL;
    if (kw && PyDict_Size(kw)) {
        PyErr_SetString(PyExc_TypeError, "Calls() takes no keyword arguments");
        return NULL;
    }
    if (!(c = (Calls *)type->tp_alloc(type, 0)))
        return NULL;
    Py_INCREF(g);
    c->g = g;
    if (!cache_of(g, S_G_READERS, &c->readers) || !cache_of(g, S_G_TS_KINDS, &c->ts_kinds) ||
        !cache_of(g, S_G_CP_KINDS, &c->cp_kinds) || !cache_of(g, S_G_DT_CACHE, &c->dt_cache) ||
        !cache_of(g, S_G_OP_FS, &c->op_fs) || !cache_of(g, S_G_TORCH_KINDS, &c->torch_kinds)) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static int calls_traverse(Calls *c, visitproc visit, void *arg)
{
    Py_VISIT(c->g);
    Py_VISIT(c->readers);
    Py_VISIT(c->ts_kinds);
    Py_VISIT(c->cp_kinds);
    Py_VISIT(c->dt_cache);
    Py_VISIT(c->op_fs);
    Py_VISIT(c->torch_kinds);
    Py_VISIT(c->fns);
    return 0;
}

static int calls_clear(Calls *c)
{
    Py_CLEAR(c->g);
    Py_CLEAR(c->readers);
    Py_CLEAR(c->ts_kinds);
    Py_CLEAR(c->cp_kinds);
    Py_CLEAR(c->dt_cache);
    Py_CLEAR(c->op_fs);
    Py_CLEAR(c->torch_kinds);
    Py_CLEAR(c->fns);
    c->usable = 0;
    return 0;
}

static void calls_dealloc(Calls *c)
{
    PyObject_GC_UnTrack(c);
    calls_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *get_calls(Calls *c, void *unused)
{
    return PyLong_FromUnsignedLongLong(c->calls);
}

static PyObject *get_passed(Calls *c, void *unused)
{
    return PyLong_FromUnsignedLongLong(c->passed);
}

static PyMethodDef calls_methods[] = {
    {"allreduce", (PyCFunction)(void (*)(void))calls_allreduce, METH_FASTCALL,
     "allreduce(sendbuf, recvbuf, op, comm, stream): True when called here, False for the Python path"},
    {"allgather", (PyCFunction)(void (*)(void))calls_allgather, METH_FASTCALL,
     "allgather(sendbuf, recvbuf, comm, stream): True when called here, False for the Python path"},
    {"reduce_scatter_block", (PyCFunction)(void (*)(void))calls_reduce_scatter_block, METH_FASTCALL,
     "reduce_scatter_block(sendbuf, recvbuf, op, comm, stream): True when called here, False for the Python path"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef calls_getset[] = {
    {"calls", (getter)get_calls, NULL, "calls made by the extension", NULL},
    {"passed", (getter)get_passed, NULL, "calls left to the Python path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CallsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tlmpi_fast.Calls",
    .tp_basicsize = sizeof(Calls),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Calls(globals of tlmpi_enqueue): its three collectives' per-call work in C",
    .tp_new = calls_new,
    .tp_dealloc = (destructor)calls_dealloc,
    .tp_traverse = (traverseproc)calls_traverse,
    .tp_clear = (inquiry)calls_clear,
    .tp_methods = calls_methods,
    .tp_getset = calls_getset,
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT, "_tlmpi_fast",
    "tlmpi_enqueue's optional C extension: the per-call work of its collectives (python/_tlmpi_fast.c)", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tlmpi_fast(void);
__attribute__((visibility("default"))) PyMODINIT_FUNC PyInit__tlmpi_fast(void)
{
    PyObject *m;
    int i;
    for (i = 0; i < NSTR; i++)
        if (!str[i] && !(str[i] = PyUnicode_InternFromString(str_text[i])))
            return NULL;
    if (!one && !(one = PyLong_FromLong(1)))
        return NULL;
    if (PyType_Ready(&CallsType) < 0)
        return NULL;
    if (!(m = PyModule_Create(&fast_module)))
        return NULL;
    Py_INCREF(&CallsType);
    if (PyModule_AddObject(m, "Calls", (PyObject *)&CallsType) < 0) {
        Py_DECREF(&CallsType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "API", TLMPI_FAST_API) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
