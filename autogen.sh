#!/bin/sh
set -e
cd "$(dirname "$0")"
autoreconf -fi
