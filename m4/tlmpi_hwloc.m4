dnl TLMPI_CHECK_HWLOC: --with-hwloc[=DIR] (yes/no/check), pkg-config first.
AC_DEFUN([TLMPI_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc], AS_HELP_STRING([--with-hwloc@<:@=DIR@:>@], [hwloc >= 2.0 for GPU/NIC locality (default: check)]),
    [], [with_hwloc=check])
  tlmpi_have_hwloc=no
  HWLOC_CFLAGS= HWLOC_LIBS=
  case "$with_hwloc" in
    no) ;;
    yes|check)
      PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [tlmpi_have_hwloc=yes], [
        AC_CHECK_HEADER([hwloc.h], [AC_CHECK_LIB([hwloc], [hwloc_topology_init],
          [tlmpi_have_hwloc=yes HWLOC_LIBS=-lhwloc])])]) ;;
    *)
      tlmpi_save_CPPFLAGS=$CPPFLAGS tlmpi_save_LDFLAGS=$LDFLAGS
      CPPFLAGS="$CPPFLAGS -I$with_hwloc/include" LDFLAGS="$LDFLAGS -L$with_hwloc/lib"
      AC_CHECK_HEADER([hwloc.h], [AC_CHECK_LIB([hwloc], [hwloc_topology_init], [tlmpi_have_hwloc=yes
        HWLOC_CFLAGS="-I$with_hwloc/include" HWLOC_LIBS="-L$with_hwloc/lib -Wl,-rpath,$with_hwloc/lib -lhwloc"])])
      CPPFLAGS=$tlmpi_save_CPPFLAGS LDFLAGS=$tlmpi_save_LDFLAGS ;;
  esac
  if test "x$tlmpi_have_hwloc" = xno && test "x$with_hwloc" != xcheck && test "x$with_hwloc" != xno; then
    AC_MSG_ERROR([hwloc requested but not usable])
  fi
  test "x$tlmpi_have_hwloc" = xyes && AC_DEFINE([HAVE_HWLOC], [1], [hwloc available])
  AC_SUBST([HWLOC_CFLAGS])
  AC_SUBST([HWLOC_LIBS])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$tlmpi_have_hwloc" = xyes])
])
