#!/bin/sh
# docs/ENV.md must be exactly what tools/tlmpi_info --env-markdown prints from src/core/env.def.
# Fails with the diff and the command that regenerates the file.
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
info=$builddir/tools/tlmpi_info
doc=$srcdir/docs/ENV.md
if [ ! -x "$info" ]; then
    echo "SKIP: $info not built"
    exit 77
fi
tmp=$(mktemp "${TMPDIR:-/tmp}/tlmpi_env_md.XXXXXX") || exit 99
trap 'rm -f "$tmp"' EXIT
# TLMPI_* variables in the environment do not change the Markdown (it lists the defaults)
if ! "$info" --env-markdown >"$tmp"; then
    echo "FAIL: $info --env-markdown failed"
    exit 1
fi
if ! diff -u "$doc" "$tmp"; then
    echo "FAIL: $doc is stale (src/core/env.def changed). Regenerate it with:"
    echo "    $info --env-markdown > $doc"
    exit 1
fi
echo "PASS: $doc matches src/core/env.def"
