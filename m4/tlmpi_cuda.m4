dnl TLMPI_CHECK_CUDA: --with-cuda[=DIR] (yes/no/check). Links libcudart only, never libcuda.
AC_DEFUN([TLMPI_CHECK_CUDA], [
  AC_ARG_WITH([cuda], AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [CUDA toolkit (default: check $CUDA_HOME, then /usr/local/cuda)]),
    [], [with_cuda=check])
  AC_ARG_WITH([nvcc-gencode], AS_HELP_STRING([--with-nvcc-gencode=FLAGS],
      [nvcc -gencode flags (default: sm_90 SASS + compute_90 PTX)]),
    [NVCC_ARCH=$withval], [NVCC_ARCH="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"])
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
