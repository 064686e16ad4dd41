dnl TLMPI_CHECK_PYTHON_EXT: the optional CPython extension python/_tlmpi_fast (tlmpi_enqueue's per-call
dnl work in C; python/local.mk). Built when $PYTHON (default python3) names a Python 3.7 or newer whose
dnl Python.h compiles with $CC, under the name that Python imports (_tlmpi_fast$EXT_SUFFIX); otherwise
dnl one line says so and nothing is built (tlmpi_enqueue.py runs its pure-Python path). Never under
dnl --enable-sanitize: a Python without the sanitizer runtime cannot load an instrumented module.
dnl --disable-python-ext turns it off. Sets PYTHON_CPPFLAGS, PYTHON_EXT_SUFFIX, HAVE_PYTHON_EXT.
AC_DEFUN([TLMPI_CHECK_PYTHON_EXT], [
  AC_ARG_VAR([PYTHON], [the Python whose headers build the optional extension python/_tlmpi_fast (default: python3)])
  AC_ARG_ENABLE([python-ext], AS_HELP_STRING([--disable-python-ext],
      [do not build the optional C extension of tlmpi_enqueue.py (default: built when Python.h is found)]),
    [], [enable_python_ext=check])
  tlmpi_have_python_ext=no
  tlmpi_python_why=
  PYTHON_CPPFLAGS= PYTHON_EXT_SUFFIX=
  if test "x$enable_python_ext" = xno; then
    tlmpi_python_why="--disable-python-ext"
  elif test "x$enable_sanitize" != xno && test -n "$enable_sanitize"; then
    tlmpi_python_why="not with --enable-sanitize (Python cannot load an instrumented module)"
  else
    AC_PATH_PROGS([PYTHON], [python3])
    if test -z "$PYTHON"; then
      tlmpi_python_why="no python3"
    else
      tlmpi_py_inc=`"$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()@<:@'include'@:>@)" 2>/dev/null`
      PYTHON_EXT_SUFFIX=`"$PYTHON" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX') or '')" 2>/dev/null`
      AC_MSG_CHECKING([for Python.h of $PYTHON])
      tlmpi_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS -I$tlmpi_py_inc"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX < 0x03070000
#error Python 3.7 or newer (METH_FASTCALL)
#endif]], [[return Py_IsInitialized();]])],
        [tlmpi_have_python_ext=yes], [tlmpi_python_why="no usable Python.h for $PYTHON (${tlmpi_py_inc:-no include path})"])
      CPPFLAGS=$tlmpi_save_CPPFLAGS
      AC_MSG_RESULT([$tlmpi_have_python_ext${tlmpi_py_inc:+ ($tlmpi_py_inc)}])
      if test "x$tlmpi_have_python_ext" = xyes && test -z "$PYTHON_EXT_SUFFIX"; then
        tlmpi_have_python_ext=no
        tlmpi_python_why="$PYTHON has no EXT_SUFFIX"
      fi
      test "x$tlmpi_have_python_ext" = xyes && PYTHON_CPPFLAGS="-I$tlmpi_py_inc"
    fi
  fi
  if test "x$tlmpi_have_python_ext" = xno; then
    test "x$enable_python_ext" = xyes && AC_MSG_ERROR([--enable-python-ext: $tlmpi_python_why])
    AC_MSG_NOTICE([the optional Python extension _tlmpi_fast is not built ($tlmpi_python_why): tlmpi_enqueue.py runs pure Python])
  fi
  AC_SUBST([PYTHON_CPPFLAGS])
  AC_SUBST([PYTHON_EXT_SUFFIX])
  AM_CONDITIONAL([HAVE_PYTHON_EXT], [test "x$tlmpi_have_python_ext" = xyes])
])
