#!/bin/sh
# python_args.sh: tests/unit/python_args.py (what tlmpi_enqueue's collectives hand to the library, with
# mpi4py, CuPy and the library stubbed) with python3; skips (77) without python3. No MPI, no GPU.
srcdir=${top_srcdir:-.}
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
top_srcdir=$srcdir exec "$py" "$srcdir/tests/unit/python_args.py"
