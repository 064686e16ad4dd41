#!/bin/sh
# spack_recipe.sh: tests/unit/spack_recipe.py (the Spack recipe, packaging/spack, against a stub of
# Spack's directives and against the options configure.ac accepts) with python3; skips (77) without
# python3. No MPI run, no GPU, no Spack.
srcdir=${top_srcdir:-.}
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
top_srcdir=$srcdir exec "$py" "$srcdir/tests/unit/spack_recipe.py"
