# python/: the mpi4py module over tlmpi's stream-ordered entry points (tlmpi_enqueue.py, ctypes, pure
# Python) and its CUDA-graph example, installed as data into $(pkgdatadir)/python
# ($(datadir)/tlmpi/python; README.md "Python") and shipped by make dist. Its tests:
# tests/mpi/python.sh (no GPU, tests/local.mk) and tests/gpu/python.sh (GPU host, device-run.sh python).
tlmpipythondir = $(pkgdatadir)/python
dist_tlmpipython_DATA = python/tlmpi_enqueue.py
tlmpipyexamplesdir = $(pkgdatadir)/python/examples
dist_tlmpipyexamples_DATA = python/examples/graph_step.py

# _tlmpi_fast: the module's optional CPython extension (python/_tlmpi_fast.c: the per-call work of the
# three collectives in C), built where configure found Python.h (m4/tlmpi_python.m4) as a libtool
# module, copied to python/_tlmpi_fast$(PYTHON_EXT_SUFFIX) in the build tree (the name Python imports;
# tests/unit/python_fast.sh imports it from there) and installed under that name beside
# tlmpi_enqueue.py. No MPI, no CUDA: only Python's headers (not AM_CPPFLAGS).
EXTRA_DIST += python/_tlmpi_fast.c
if HAVE_PYTHON_EXT
noinst_LTLIBRARIES += python/_tlmpi_fast.la
python__tlmpi_fast_la_SOURCES = python/_tlmpi_fast.c
python__tlmpi_fast_la_CPPFLAGS = $(PYTHON_CPPFLAGS)
python__tlmpi_fast_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
python__tlmpi_fast_la_LDFLAGS = -module -avoid-version -shared -rpath $(tlmpipythondir)
TLMPI_PY_EXT = python/_tlmpi_fast$(PYTHON_EXT_SUFFIX)
CLEANFILES += $(TLMPI_PY_EXT)
all-local: $(TLMPI_PY_EXT)
$(TLMPI_PY_EXT): python/_tlmpi_fast.la
	$(AM_V_GEN)cp -f python/.libs/_tlmpi_fast.so $@
install-data-local: $(TLMPI_PY_EXT)
	$(MKDIR_P) '$(DESTDIR)$(tlmpipythondir)'
	$(INSTALL_PROGRAM) $(TLMPI_PY_EXT) '$(DESTDIR)$(tlmpipythondir)/_tlmpi_fast$(PYTHON_EXT_SUFFIX)'
uninstall-local:
	rm -f '$(DESTDIR)$(tlmpipythondir)/_tlmpi_fast$(PYTHON_EXT_SUFFIX)'
endif
