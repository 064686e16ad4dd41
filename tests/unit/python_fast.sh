#!/bin/sh
# python_fast.sh: tests/unit/python_fast.py (the optional C extension of tlmpi_enqueue against its
# Python path, mpi4py, CuPy, torch and the library stubbed) with the Python configure built the
# extension for ($TEST_PYTHON, else python3). Skips (77) when this build has no extension for that
# Python (configure found no Python.h: no python/_tlmpi_fast$EXT_SUFFIX); where it has one, the test
# fails unless the module loads it. No MPI, no GPU.
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
py=$(command -v "${TEST_PYTHON:-python3}") || { echo "SKIP: no ${TEST_PYTHON:-python3}"; exit 77; }
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or "")')
if [ -z "$suffix" ] || [ ! -f "$builddir/python/_tlmpi_fast$suffix" ]; then
    echo "SKIP: no $builddir/python/_tlmpi_fast$suffix (configure did not build the extension for $py)"
    exit 77
fi
top_srcdir=$srcdir top_builddir=$builddir PYTHON_FAST_EXPECT=1 PYTHONDONTWRITEBYTECODE=1 \
    exec "$py" "$srcdir/tests/unit/python_fast.py"
