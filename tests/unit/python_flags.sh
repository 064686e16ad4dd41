#!/bin/sh
# python_flags.sh: tests/unit/python_flags.py (tlmpi_enqueue.prepare's flags) with python3; skips (77)
# without python3.
srcdir=${top_srcdir:-.}
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
top_srcdir=$srcdir exec "$py" "$srcdir/tests/unit/python_flags.py"
