dnl TLMPI_NVCC_GENCODE(LIST): NVCC_ARCH from a comma-separated list of sm_NN[a|f] (or NN): one
dnl -gencode arch=compute_NN,code=sm_NN each, plus PTX (code=compute_NN) of the highest NN.
AC_DEFUN([TLMPI_NVCC_GENCODE], [
  case "$1" in
    -*) NVCC_ARCH="$1" ;;
    *)
      NVCC_ARCH= tlmpi_ptx_arch= tlmpi_ptx_num=-1
      for tlmpi_sm in `echo "$1" | tr ',' ' '`; do
        tlmpi_sm=`echo "$tlmpi_sm" | sed 's/^sm_//; s/^compute_//'`
        tlmpi_num=`echo "$tlmpi_sm" | sed 's/@<:@^0-9@:>@.*$//'`
        case "$tlmpi_num" in
          ""|*@<:@!0-9@:>@*) AC_MSG_ERROR([--with-nvcc-gencode: "$tlmpi_sm" is not an architecture like sm_90]) ;;
        esac
        NVCC_ARCH="$NVCC_ARCH -gencode arch=compute_$tlmpi_sm,code=sm_$tlmpi_sm"
        if test "$tlmpi_num" -gt "$tlmpi_ptx_num"; then tlmpi_ptx_num=$tlmpi_num tlmpi_ptx_arch=$tlmpi_sm; fi
      done
      test -n "$tlmpi_ptx_arch" || AC_MSG_ERROR([--with-nvcc-gencode: empty architecture list])
      NVCC_ARCH="${NVCC_ARCH# } -gencode arch=compute_$tlmpi_ptx_arch,code=compute_$tlmpi_ptx_arch"
      ;;
  esac
])

dnl TLMPI_CHECK_CUDA: --with-cuda[=DIR] (yes/no/check). Links libcudart only, never libcuda.
dnl nvcc must compile a small kernel with NVCC_ARCH, or CUDA support is off (an error when
dnl --with-cuda was given explicitly).
AC_DEFUN([TLMPI_CHECK_CUDA], [
  AC_ARG_WITH([cuda], AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [CUDA toolkit (default: check $CUDA_HOME, then /usr/local/cuda)]),
    [], [with_cuda=check])
  AC_ARG_WITH([nvcc-gencode], AS_HELP_STRING([--with-nvcc-gencode=LIST],
      [GPU architectures nvcc compiles the kernels for, comma-separated (default: sm_90): SASS for
       each, plus PTX of the highest (e.g. sm_90,sm_100). A value starting with "-" is used as the
       nvcc flags verbatim]),
    [], [with_nvcc_gencode=sm_90])
  TLMPI_NVCC_GENCODE([$with_nvcc_gencode])
  tlmpi_have_cuda=no
  CUDA_HOME_DIR=
  case "$with_cuda" in
    no) ;;
    yes|check) CUDA_HOME_DIR=${CUDA_HOME:-/usr/local/cuda} ;;
    *) CUDA_HOME_DIR=$with_cuda ;;
  esac
  if test -n "$CUDA_HOME_DIR"; then
    AC_MSG_CHECKING([for CUDA in $CUDA_HOME_DIR])
    tlmpi_cuda_libdir=
    for d in "$CUDA_HOME_DIR/lib64" "$CUDA_HOME_DIR/lib" "$CUDA_HOME_DIR/targets/x86_64-linux/lib"; do
      if test -e "$d/libcudart.so"; then tlmpi_cuda_libdir=$d; break; fi
    done
    if test -x "$CUDA_HOME_DIR/bin/nvcc" && test -f "$CUDA_HOME_DIR/include/cuda_runtime_api.h" && test -n "$tlmpi_cuda_libdir"; then
      tlmpi_save_CPPFLAGS=$CPPFLAGS tlmpi_save_LIBS=$LIBS tlmpi_save_LDFLAGS=$LDFLAGS
      CPPFLAGS="$CPPFLAGS -I$CUDA_HOME_DIR/include"
      LDFLAGS="$LDFLAGS -L$tlmpi_cuda_libdir"
      LIBS="-lcudart $LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]], [[int v; cudaRuntimeGetVersion(&v);]])],
        [tlmpi_have_cuda=yes])
      CPPFLAGS=$tlmpi_save_CPPFLAGS LIBS=$tlmpi_save_LIBS LDFLAGS=$tlmpi_save_LDFLAGS
    fi
    AC_MSG_RESULT([$tlmpi_have_cuda])
    if test "x$tlmpi_have_cuda" = xno && test "x$with_cuda" != xcheck; then
      AC_MSG_ERROR([CUDA requested but not usable in $CUDA_HOME_DIR])
    fi
  fi
  if test "x$tlmpi_have_cuda" = xyes; then
    AC_MSG_CHECKING([whether nvcc compiles a kernel with $NVCC_ARCH])
    cat > conftest.cu <<_TLMPI_EOF
__global__ void tlmpi_conftest_kernel(uint4 *d, const uint4 *s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[[i]] = s[[i]];
}
int main() { tlmpi_conftest_kernel<<<1, 32>>>(0, 0, 0); return 0; }
_TLMPI_EOF
    if "$CUDA_HOME_DIR/bin/nvcc" $NVCC_ARCH -std=c++17 -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1; then
      AC_MSG_RESULT([yes])
    else
      AC_MSG_RESULT([no])
      tlmpi_have_cuda=no
      if test "x$with_cuda" != xcheck; then
        AC_MSG_ERROR([nvcc ($CUDA_HOME_DIR/bin/nvcc) cannot compile a kernel with $NVCC_ARCH (see config.log; --with-nvcc-gencode picks the architectures)])
      fi
      AC_MSG_WARN([CUDA support disabled: nvcc ($CUDA_HOME_DIR/bin/nvcc) cannot compile a kernel with $NVCC_ARCH (see config.log; --with-nvcc-gencode picks the architectures)])
    fi
    rm -f conftest.cu conftest.$OBJEXT
  fi
  if test "x$tlmpi_have_cuda" = xyes; then
    CUDA_HOME=$CUDA_HOME_DIR
    NVCC="$CUDA_HOME_DIR/bin/nvcc"
    CUDA_CPPFLAGS="-I$CUDA_HOME_DIR/include"
    CUDA_LDFLAGS="-L$tlmpi_cuda_libdir -Wl,-rpath,$tlmpi_cuda_libdir"
    CUDA_LIBS="-lcudart -lstdc++"
    AC_DEFINE([HAVE_CUDA], [1], [CUDA runtime available])
  fi
  AC_SUBST([CUDA_HOME])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_ARCH])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$tlmpi_have_cuda" = xyes])
])
