# python/: the mpi4py module over tlmpi's stream-ordered entry points (tlmpi_enqueue.py, ctypes, pure
# Python: nothing is built) and its CUDA-graph example, installed as data into $(pkgdatadir)/python
# ($(datadir)/tlmpi/python; README.md "Python") and shipped by make dist. Its tests:
# tests/mpi/python.sh (no GPU, tests/local.mk) and tests/gpu/python.sh (GPU host, device-run.sh python).
tlmpipythondir = $(pkgdatadir)/python
dist_tlmpipython_DATA = python/tlmpi_enqueue.py
tlmpipyexamplesdir = $(pkgdatadir)/python/examples
dist_tlmpipyexamples_DATA = python/examples/graph_step.py
