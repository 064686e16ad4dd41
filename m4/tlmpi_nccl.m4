dnl TLMPI_CHECK_NCCL: --with-nccl[=DIR] (yes/no/check). Headers only: libnccl is dlopen'ed at
dnl run time so that programs start where NCCL is absent. Records the header version for the summary.
AC_DEFUN([TLMPI_CHECK_NCCL], [
  AC_ARG_WITH([nccl], AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL headers (default: check the CUDA prefix)]),
    [], [with_nccl=check])
  tlmpi_have_nccl=no tlmpi_nccl_version_str=none
  NCCL_CPPFLAGS=
  if test "x$with_nccl" != xno && test "x$tlmpi_have_cuda" = xyes; then
    case "$with_nccl" in
      yes|check) tlmpi_nccl_dir=$CUDA_HOME ;;
      *) tlmpi_nccl_dir=$with_nccl ;;
    esac
    tlmpi_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS -I$tlmpi_nccl_dir/include $CUDA_CPPFLAGS"
    AC_MSG_CHECKING([for nccl.h >= 2.18 in $tlmpi_nccl_dir])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[
#if NCCL_VERSION_CODE < 21800
#error too old
#endif
]])], [tlmpi_have_nccl=yes])
    AC_MSG_RESULT([$tlmpi_have_nccl])
    if test "x$tlmpi_have_nccl" = xyes; then
      NCCL_CPPFLAGS="-I$tlmpi_nccl_dir/include"
      tlmpi_nccl_version_str=`sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\(@<:@0-9@:>@*\).*/\2/p' "$tlmpi_nccl_dir/include/nccl.h" | tr '\n' . | sed 's/\.$//'`
      AC_DEFINE([HAVE_NCCL], [1], [NCCL headers available (library loaded at run time)])
    fi
    CPPFLAGS=$tlmpi_save_CPPFLAGS
    if test "x$tlmpi_have_nccl" = xno && test "x$with_nccl" != xcheck; then
      AC_MSG_ERROR([NCCL requested but nccl.h not usable in $tlmpi_nccl_dir])
    fi
  fi
  AC_SUBST([NCCL_CPPFLAGS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$tlmpi_have_nccl" = xyes])
])
