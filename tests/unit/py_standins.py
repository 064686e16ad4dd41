# py_standins: the stand-ins for mpi4py, CuPy and torch that the Python module's unit tests share
# (tests/unit/python_args.py, tests/unit/python_fast.py), installed into sys.modules on import, before
# a test imports tlmpi_enqueue. mpi4py: handles are numbers (Handle.py2f), the datatypes and ops the
# module names, MPI.COMM_WORLD of 4 ranks (this one rank 0; a test may set another). CuPy: ndarray with
# data.ptr, size, dtype, flags and a __cuda_array_interface__ that counts its uses (cai_uses), the
# current stream (cp.current). torch: tensors with data_ptr / numel / is_contiguous and the current
# stream of a device. Other array kinds: Cai (an object with only a __cuda_array_interface__).
import sys
import types

# --- mpi4py ----------------------------------------------------------------------------------------


class Handle(object):
    def __init__(self, f, size=None, rank=0):
        self.f, self.size, self.rank = f, size, rank

    def py2f(self):
        return self.f

    def Get_size(self):
        return self.size

    def Get_rank(self):
        return self.rank

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

# --- CuPy ------------------------------------------------------------------------------------------


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
        self._c, self.strides = strides is None, strides

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
C8, B1 = Dtype("complex64", "<c8"), Dtype("bool", "|b1")

# --- other arrays ----------------------------------------------------------------------------------


class Cai(object):
    def __init__(self, ptr, shape, typestr, stream=None, readonly=False, strides=None, **extra):
        self.__cuda_array_interface__ = {"data": (ptr, readonly), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3, "stream": stream}
        self.__cuda_array_interface__.update(extra)

# --- torch -----------------------------------------------------------------------------------------


class TorchDtype(object):
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class TorchLike(object):
    def __init__(self, ptr, n, dtype, device=0, cuda=True, contiguous=True):
        self._ptr, self._n, self.dtype, self.device, self.is_cuda = ptr, n, TorchDtype(dtype), device, cuda
        self._contig = contiguous

    def data_ptr(self):
        return self._ptr

    def numel(self):
        return self._n

    def is_contiguous(self):
        return self._contig


TorchLike.__module__ = "torch"
torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(current_stream=lambda device: types.SimpleNamespace(cuda_stream=0x700 + device))
sys.modules["torch"] = torch
