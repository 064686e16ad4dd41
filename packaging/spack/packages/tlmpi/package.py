# Spack recipe of tlmpi: GPU-aware MPI collectives as a PMPI interposer (libtlmpi, tlmpi.h, tlmpi.pc,
# the CMake package, tlmpi_info / tlmpi_tune, the Python module in share/tlmpi/python).
#
# Variants map to configure's options (configure.ac, m4/tlmpi_*.m4):
#   +cuda   --with-cuda=<cuda prefix>     ~cuda   --without-cuda (tlmpi then passes every call through)
#   cuda_arch=90,100 (with +cuda)         --with-nvcc-gencode=sm_90,sm_100 (SASS each, PTX of the highest)
#   +nccl   --with-nccl=<nccl prefix>     ~nccl   --without-nccl (NCCL headers at build time; libnccl is
#                                                  dlopen'ed at run time, found through libtlmpi's RUNPATH)
#   +hwloc  --with-hwloc=<hwloc prefix>   ~hwloc  --without-hwloc
# MPI: CC is the MPI's compiler wrapper (configure finds mpi.h and the PMPI entry points through it),
# MPIEXEC its mpiexec (used by make check only). Every version builds from git, so configure is
# generated (autoreconf) from the autotools build dependencies.
#
# Checked without Spack by tests/unit/spack_recipe.py (a stub of Spack's directives).
import os

from spack.package import *  # noqa: F401,F403

try:  # Spack >= 1.0: the build systems come from the builtin package repository
    from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
except ImportError:  # Spack 0.x: spack.package exports them
    pass


class Tlmpi(AutotoolsPackage):
    """tlmpi serves MPI_Allgather, MPI_Reduce_scatter_block and MPI_Allreduce on CUDA device buffers
    with its own kernels (node tier), NCCL or staging, as a PMPI interposer in front of any MPI; plus
    stream-ordered, CUDA-graph-capturable forms (tlmpi_*_enqueue) and a Python module over them."""

    # The project states no public URL: both are placeholders. Point `git` at your clone (spack edit
    # tlmpi), or build a checkout in place: spack develop --path /path/to/tlmpi tlmpi@main
    homepage = "https://example.invalid/tlmpi"
    git = "https://example.invalid/tlmpi.git"

    # configure.ac's AC_INIT version is 0.1.0; it has no release tag or tarball yet, so the only
    # version is the branch.
    version("main", branch="main")

    variant("cuda", default=True, description="Device-buffer collectives with CUDA (nvcc kernels, libcudart)")
    variant(
        "cuda_arch",
        default="90",
        values=("70", "75", "80", "86", "89", "90", "90a", "100", "100a", "103", "120"),
        multi=True,
        when="+cuda",
        description="GPU architectures nvcc compiles the kernels for (configure --with-nvcc-gencode)",
    )
    variant("nccl", default=True, description="The NCCL tier (headers at build time, libnccl loaded at run time)")
    variant("hwloc", default=True, description="GPU/NIC locality from hwloc >= 2.0")

    conflicts("+nccl", when="~cuda", msg="the NCCL tier needs CUDA (+cuda)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("cuda", when="+cuda")
    depends_on("nccl@2.18:", when="+nccl")
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("check@0.11:", type="test")

    def configure_args(self):
        spec = self.spec
        mpi = spec["mpi"]
        args = ["CC=%s" % mpi.mpicc]
        mpiexec = join_path(mpi.prefix.bin, "mpiexec")
        if os.path.exists(mpiexec):
            args.append("MPIEXEC=%s" % mpiexec)
        if spec.satisfies("+cuda"):
            args.append("--with-cuda=%s" % spec["cuda"].prefix)
            archs = spec.variants["cuda_arch"].value
            args.append("--with-nvcc-gencode=%s" % ",".join("sm_" + a for a in archs))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+nccl"):
            args.append("--with-nccl=%s" % spec["nccl"].prefix)
        else:
            args.append("--without-nccl")
        if spec.satisfies("+hwloc"):
            args.append("--with-hwloc=%s" % spec["hwloc"].prefix)
        else:
            args.append("--without-hwloc")
        return args

    def setup_run_environment(self, env):
        # tlmpi_enqueue (share/tlmpi/python) importable, and the library it loads found without LD_PRELOAD
        env.prepend_path("PYTHONPATH", join_path(self.prefix.share, "tlmpi", "python"))
        env.set("TLMPI_LIBRARY", join_path(self.prefix.lib, "libtlmpi.so"))
