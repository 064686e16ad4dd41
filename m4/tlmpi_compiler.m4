dnl TLMPI_COMPILER_FLAGS: warnings and hidden visibility for the library; the sanitizer and fuzzing
dnl options (their flags are applied by TLMPI_SANITIZE_APPLY, at the end of configure).
AC_DEFUN([TLMPI_COMPILER_FLAGS], [
  AC_ARG_ENABLE([werror], AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors]))
  TLMPI_CFLAGS="-Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes"
  test "x$enable_werror" = xyes && TLMPI_CFLAGS="$TLMPI_CFLAGS -Werror"
  TLMPI_VIS_CFLAGS="-fvisibility=hidden"
  AC_SUBST([TLMPI_CFLAGS])
  AC_SUBST([TLMPI_VIS_CFLAGS])
  AC_ARG_ENABLE([sanitize], AS_HELP_STRING([--enable-sanitize=LIST],
      [build everything with the compiler's sanitizers, comma-separated: address,undefined (ASan +
       UBSan; "yes" is the same) or thread (TSan); make check then runs with their options and
       tests/sanitize/*.supp (scripts/sanitize.sh runs the CI subset)]),
    [], [enable_sanitize=no])
  AC_ARG_ENABLE([asan], AS_HELP_STRING([--enable-asan], [the same as --enable-sanitize=address]))
  test "x$enable_asan" = xyes && test "x$enable_sanitize" = xno && enable_sanitize=address
  case "$enable_sanitize" in
    no|"") enable_sanitize=no ;;
    yes) enable_sanitize=address,undefined ;;
  esac
  for tlmpi_san in `echo "$enable_sanitize" | tr ',' ' '`; do
    case "$tlmpi_san" in
      no|address|undefined|thread|leak) ;;
      *) AC_MSG_ERROR([--enable-sanitize: unknown sanitizer '$tlmpi_san' (address, undefined, thread, leak)]) ;;
    esac
  done
  AC_ARG_ENABLE([fuzz], AS_HELP_STRING([--enable-fuzz],
      [build the libFuzzer harnesses of tests/fuzz (clang: CC="mpicc.mpich -cc=clang" or OMPI_CC=clang;
       meant with --enable-sanitize=address,undefined; scripts/fuzz.sh runs them)]),
    [], [enable_fuzz=no])
  TLMPI_SANITIZE=
  test "x$enable_sanitize" = xno || TLMPI_SANITIZE=$enable_sanitize
  AC_SUBST([TLMPI_SANITIZE])
  AM_CONDITIONAL([ENABLE_SANITIZE], [test "x$enable_sanitize" != xno])
  AM_CONDITIONAL([ENABLE_FUZZ], [test "x$enable_fuzz" = xyes])
])

dnl TLMPI_SANITIZE_APPLY: --enable-sanitize=LIST and --enable-fuzz, after every other check (so that
dnl configure's own test programs are not built with them, which made configure 4x slower): CFLAGS
dnl and LDFLAGS get -fsanitize=LIST, so that every C object and link has it: the library, the fakes,
dnl the test programs and what the shell tests build with $(CC) $(CFLAGS) / $(LDFLAGS). The CUDA
dnl kernels (nvcc) are not instrumented. --enable-fuzz adds -fsanitize=fuzzer-no-link (libFuzzer's
dnl coverage) to CFLAGS; the harnesses link -fsanitize=fuzzer (tests/fuzz/local.mk).
AC_DEFUN([TLMPI_SANITIZE_APPLY], [
  if test "x$enable_sanitize" != xno; then
    tlmpi_san_flags="-fsanitize=$enable_sanitize -fno-omit-frame-pointer -g"
    case ",$enable_sanitize," in
      *,undefined,*) tlmpi_san_flags="$tlmpi_san_flags -fno-sanitize-recover=undefined" ;;
    esac
    AC_MSG_CHECKING([whether $CC builds with $tlmpi_san_flags])
    tlmpi_save_CFLAGS=$CFLAGS tlmpi_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $tlmpi_san_flags" LDFLAGS="$LDFLAGS -fsanitize=$enable_sanitize"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdlib.h>]], [[free(malloc(8));]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([$CC cannot build with -fsanitize=$enable_sanitize (gcc: libasan, libubsan, libtsan; clang: libclang-rt; see config.log)])])
  fi
  if test "x$enable_fuzz" = xyes; then
    AC_MSG_CHECKING([whether $CC links libFuzzer harnesses])
    tlmpi_save2_CFLAGS=$CFLAGS tlmpi_save2_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS -fsanitize=fuzzer" LDFLAGS="$LDFLAGS -fsanitize=fuzzer"
    AC_LINK_IFELSE([AC_LANG_SOURCE([[#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return n && d[0] == 1; }]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([--enable-fuzz: $CC cannot link -fsanitize=fuzzer (clang with its libFuzzer: Debian's clang and libclang-rt-14-dev)])])
    CFLAGS="$tlmpi_save2_CFLAGS -fsanitize=fuzzer-no-link" LDFLAGS=$tlmpi_save2_LDFLAGS
  fi
])
