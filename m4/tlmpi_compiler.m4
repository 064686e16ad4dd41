dnl TLMPI_COMPILER_FLAGS: warnings and hidden visibility for the library.
AC_DEFUN([TLMPI_COMPILER_FLAGS], [
  AC_ARG_ENABLE([werror], AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors]))
  TLMPI_CFLAGS="-Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes"
  test "x$enable_werror" = xyes && TLMPI_CFLAGS="$TLMPI_CFLAGS -Werror"
  TLMPI_VIS_CFLAGS="-fvisibility=hidden"
  AC_SUBST([TLMPI_CFLAGS])
  AC_SUBST([TLMPI_VIS_CFLAGS])
  AC_ARG_ENABLE([asan], AS_HELP_STRING([--enable-asan], [build with AddressSanitizer (for leak tests)]))
  AM_CONDITIONAL([ENABLE_ASAN], [test "x$enable_asan" = xyes])
])
