#!/bin/sh
# plot.sh ARGS...: bench/plot.py ARGS... with a Python that has matplotlib. Uses python3 from PATH
# when it can import matplotlib, else Debian's /usr/bin/python3 with python3-matplotlib, installing
# that package when it is missing (scripts/packages.sh: needs root or sudo then; SKIP_APT=1 never
# installs). Only the plots need it: the library and its tests never do.
here=$(cd "$(dirname "$0")" && pwd)
py=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
    pk=
    for f in "$here/../scripts/packages.sh" "$here/packages.sh"; do [ -f "$f" ] && pk=$f && break; done
    if [ -n "$pk" ] && command -v apt-get >/dev/null 2>&1; then
        . "$pk"
        install_missing plot.sh python3-matplotlib >&2
    fi
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        py=/usr/bin/python3
    else
        echo "plot.sh: no Python with matplotlib (Debian: apt-get install python3-matplotlib)" >&2
        exit 2
    fi
fi
plot=$here/plot.py
exec "$py" "$plot" "$@"
