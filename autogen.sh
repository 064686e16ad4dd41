#!/bin/sh
# autogen.sh: generate configure and the Makefile.in files from a git checkout.
# m4/ in git holds only tlmpi's own macros (tlmpi_*.m4); autoreconf -fi runs libtoolize --copy --force,
# which writes libtool's macros (m4/libtool.m4, ltoptions.m4, ltsugar.m4, ltversion.m4, lt~obsolete.m4;
# ignored by git) and the aux files in config/.
set -e
cd "$(dirname "$0")"
autoreconf -fi
