# spack_recipe [RECIPE]: the Spack recipe (packaging/spack/packages/tlmpi/package.py, or RECIPE) without
# Spack: a stub of spack.package (AutotoolsPackage, the directives recording their calls, join_path) is
# put in sys.modules, the recipe is imported and checked:
#   - class Tlmpi, an AutotoolsPackage (also where it comes from spack_repo.builtin.build_systems, as
#     under Spack >= 1.0);
#   - boolean variants cuda, nccl, hwloc; depends_on("mpi") unconditionally, cuda when +cuda, nccl when
#     +nccl, hwloc@2: when +hwloc (configure wants hwloc >= 2.0); +nccl needs +cuda (a conflict or a
#     requirement); autoconf, automake, libtool, m4 and pkgconfig as build dependencies;
#   - version("main", branch="main") with a git URL, and any numbered version equal to AC_INIT's;
#   - packaging/spack/repo.yaml's namespace is tlmpi;
#   - configure_args() for every allowed combination of the variants (and several cuda_arch values):
#     every --with-X / --without-X / --enable-X / --disable-X is an option configure.ac or m4/*.m4
#     declares, every NAME=VALUE a variable configure takes (AC_ARG_VAR or a standard one), no option
#     twice; CC is the MPI's mpicc, MPIEXEC its mpiexec where there is one; each variant on gives
#     --with-X=<that dependency's prefix>, off --without-X (never configure's default "check", which
#     would pick up a system CUDA / NCCL / hwloc); cuda_arch gives --with-nvcc-gencode=sm_A,sm_B;
#   - setup_run_environment() puts share/tlmpi/python (where python/local.mk installs the module) on
#     PYTHONPATH and names lib/libtlmpi.so in TLMPI_LIBRARY.
# Prints "spack_recipe: PASS|FAIL: N checks, M failures"; exit 0 or 1.
import importlib.util
import os
import re
import sys
import tempfile
import types

top = os.environ.get("top_srcdir", ".")
recipe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "packaging", "spack", "packages", "tlmpi",
                                                             "package.py")
fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL: %s" % what)
    return cond


# --- what configure accepts -------------------------------------------------------------------------

def read(path):
    with open(path) as f:
        return f.read()


ac_text = read(os.path.join(top, "configure.ac"))
m4dir = os.path.join(top, "m4")
for name in sorted(os.listdir(m4dir)):
    if name.endswith(".m4"):
        ac_text += read(os.path.join(m4dir, name))
WITH = set(re.findall(r"AC_ARG_WITH\(\s*\[?([\w-]+)", ac_text))
ENABLE = set(re.findall(r"AC_ARG_ENABLE\(\s*\[?([\w-]+)", ac_text))
VARS = set(re.findall(r"AC_ARG_VAR\(\s*\[?(\w+)", ac_text)) | {
    "CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "CPP", "CXX", "CXXFLAGS", "CXXCPP",
    "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"}
m = re.search(r"AC_INIT\(\[tlmpi\],\s*\[([^\]]+)\]", ac_text)
ac_version = m.group(1) if m else None
check(ac_version is not None, "configure.ac: AC_INIT([tlmpi], [VERSION]) not found")
check({"cuda", "nccl", "hwloc", "nvcc-gencode"} <= WITH, "configure.ac/m4 declare --with-cuda, --with-nccl, "
      "--with-hwloc, --with-nvcc-gencode (found: %s)" % sorted(WITH))

# --- the stub of Spack -----------------------------------------------------------------------------

records = []  # (directive, args, kwargs) in the order the recipe's class body made them


def _directive(name):
    def record(*args, **kwargs):
        records.append((name, args, kwargs))
    record.__name__ = name
    return record


class AutotoolsPackage(object):
    def __init__(self, spec):
        self.spec = spec
        self.prefix = spec.prefix


class Prefix(str):
    """A Spack prefix: attributes name subdirectories (prefix.bin, prefix.share.tlmpi)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))


class Variant(object):
    def __init__(self, value):
        self.value = value


class Dep(object):
    def __init__(self, name, prefix, **attrs):
        self.name, self.prefix = name, Prefix(prefix)
        for k, v in attrs.items():
            setattr(self, k, v)


class Spec(object):
    """Concrete enough for configure_args(): "+v" / "~v" on boolean variants, spec[dep], variants[...]."""

    def __init__(self, on, cuda_arch, mpi_prefix):
        self.on = dict(on)
        self.prefix = Prefix("/spack/opt/tlmpi")
        self.variants = dict((k, Variant(v)) for k, v in on.items())
        if on.get("cuda"):
            self.variants["cuda_arch"] = Variant(tuple(cuda_arch))
        self.deps = {"mpi": Dep("mpi", mpi_prefix, mpicc=os.path.join(mpi_prefix, "bin", "mpicc"))}
        for d in ("cuda", "nccl", "hwloc"):
            if on.get(d):
                self.deps[d] = Dep(d, "/spack/opt/" + d)

    def satisfies(self, s):
        m = re.match(r"^([+~])(\w+)$", s.strip())
        if not m or m.group(2) not in self.on:
            raise ValueError("the stub spec understands +variant / ~variant only, not %r" % s)
        return self.on[m.group(2)] == (m.group(1) == "+")

    def __contains__(self, s):
        return self.satisfies(s)

    def __getitem__(self, name):
        return self.deps[name]  # KeyError, as Spack, for a dependency this spec does not have


class Env(object):
    def __init__(self):
        self.ops = []

    def set(self, name, value):
        self.ops.append(("set", name, value))

    def prepend_path(self, name, value):
        self.ops.append(("prepend_path", name, value))

    def append_path(self, name, value):
        self.ops.append(("append_path", name, value))


def install_stub():
    spack = types.ModuleType("spack")
    pkg = types.ModuleType("spack.package")
    for d in ("version", "variant", "depends_on", "conflicts", "requires", "maintainers", "license",
              "provides", "patch", "resource"):
        setattr(pkg, d, _directive(d))
    pkg.AutotoolsPackage = AutotoolsPackage
    pkg.join_path = os.path.join
    spack.package = pkg
    sys.modules["spack"], sys.modules["spack.package"] = spack, pkg


def load(modname):
    del records[:]
    spec = importlib.util.spec_from_file_location(modname, recipe)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


install_stub()
try:
    mod = load("tlmpi_recipe")
except Exception as e:
    print("FAIL: importing %s: %s: %s" % (recipe, type(e).__name__, e))
    print("spack_recipe: FAIL: %d checks, %d failures" % (checks + 1, fails + 1))
    sys.exit(1)
recs = list(records)
Tlmpi = getattr(mod, "Tlmpi", None)
check(isinstance(Tlmpi, type) and issubclass(Tlmpi, AutotoolsPackage), "class Tlmpi(AutotoolsPackage) in the recipe")


def calls(name):
    return [(a, k) for d, a, k in recs if d == name]


# variants
variants = dict((a[0], k) for a, k in calls("variant"))
for v in ("cuda", "nccl", "hwloc"):
    check(v in variants and isinstance(variants[v].get("default"), bool) and variants[v].get("description"),
          "boolean variant %r with a description (variants: %s)" % (v, sorted(variants)))
if "cuda_arch" in variants:
    check(variants["cuda_arch"].get("multi") is True and variants["cuda_arch"].get("when") == "+cuda",
          "cuda_arch: multi-valued, when +cuda")

# dependencies


def deps_named(name):
    return [(a[0], k) for a, k in calls("depends_on") if re.match(r"^%s(@|$|\s)" % re.escape(name), a[0])]


mpi = deps_named("mpi")
check(len(mpi) == 1 and mpi[0][1].get("when") is None and "build" != mpi[0][1].get("type", ("build", "link")),
      "depends_on('mpi') unconditionally, linked: %s" % mpi)
for name, when in (("cuda", "+cuda"), ("nccl", "+nccl"), ("hwloc", "+hwloc")):
    d = deps_named(name)
    check(len(d) == 1 and d[0][1].get("when") == when, "depends_on(%r, when=%r): %s" % (name, when, d))
h = deps_named("hwloc")
check(h and re.match(r"^hwloc@2(\.0)?:", h[0][0]), "hwloc@2: (configure wants hwloc >= 2.0): %s" % h)
nccl_needs_cuda = any(a[:1] == ("+nccl",) and k.get("when") == "~cuda" for a, k in calls("conflicts")) or \
    any(a[:1] == ("~cuda",) and k.get("when") == "+nccl" for a, k in calls("conflicts")) or \
    any(a[:1] == ("+cuda",) and k.get("when") == "+nccl" for a, k in calls("requires"))
check(nccl_needs_cuda, "+nccl needs +cuda: conflicts('+nccl', when='~cuda') or requires('+cuda', when='+nccl')")
for tool in ("autoconf", "automake", "libtool", "m4", "pkgconfig"):
    d = deps_named(tool)
    check(len(d) == 1 and d[0][1].get("type") in ("build", ("build",)), "depends_on(%r, type='build'): %s" % (tool, d))

# versions and the repository
versions = dict((a[0], k) for a, k in calls("version"))
check(versions.get("main") == {"branch": "main"}, "version('main', branch='main'): %s" % versions.get("main"))
check(isinstance(getattr(Tlmpi, "git", None), str) and Tlmpi.git, "a git URL (class attribute git)")
for v in versions:
    if v != "main":
        check(v == ac_version, "version %r is configure.ac's %r" % (v, ac_version))
repo_yaml = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(recipe)))), "repo.yaml")
check(os.path.exists(repo_yaml) and re.search(r"(?m)^\s+namespace:\s*['\"]?tlmpi['\"]?\s*$", read(repo_yaml)),
      "%s: namespace tlmpi" % repo_yaml)

# configure_args()
tmp = tempfile.mkdtemp(prefix="spack_recipe.")
mpi_with_exec = os.path.join(tmp, "mpich")
os.makedirs(os.path.join(mpi_with_exec, "bin"))
open(os.path.join(mpi_with_exec, "bin", "mpiexec"), "w").close()
combos = []
for cuda in (True, False):
    for nccl in (True, False):
        for hwloc in (True, False):
            if nccl and not cuda:
                continue
            combos.append(({"cuda": cuda, "nccl": nccl, "hwloc": hwloc}, ("90",), "/spack/opt/openmpi"))
combos.append(({"cuda": True, "nccl": False, "hwloc": True}, ("80", "90a", "100"), mpi_with_exec))
for on, archs, mpi_prefix in combos:
    spec = Spec(on, archs, mpi_prefix)
    what = "configure_args(%s%s, mpi %s)" % (" ".join(("+" if v else "~") + k for k, v in sorted(on.items())),
                                           " cuda_arch=" + ",".join(archs) if on["cuda"] else "", mpi_prefix)
    try:
        args = list(Tlmpi(spec).configure_args())
    except Exception as e:
        check(False, "%s raised %s: %s" % (what, type(e).__name__, e))
        continue
    seen = set()
    for a in args:
        m = re.match(r"^--(with|without|enable|disable)-([\w-]+?)(=.*)?$", a)
        if m:
            key = m.group(2)
            known = WITH if m.group(1) in ("with", "without") else ENABLE
            check(key in known, "%s: %s is not an option of configure.ac/m4" % (what, a))
        else:
            m = re.match(r"^([A-Za-z_]\w*)=", a)
            key = m.group(1) if m else a
            check(m is not None and key in VARS, "%s: %r is neither a configure option nor a variable it takes"
                  % (what, a))
        check(key not in seen, "%s: %s given twice" % (what, key))
        seen.add(key)
    check("CC=%s" % os.path.join(mpi_prefix, "bin", "mpicc") in args, "%s: CC is the MPI's mpicc: %s" % (what, args))
    if mpi_prefix == mpi_with_exec:
        check("MPIEXEC=%s" % os.path.join(mpi_prefix, "bin", "mpiexec") in args,
              "%s: MPIEXEC is the MPI's mpiexec: %s" % (what, args))
    for name in ("cuda", "nccl", "hwloc"):
        want = "--with-%s=/spack/opt/%s" % (name, name) if on[name] else "--without-%s" % name
        check(want in args, "%s: %s expected in %s" % (what, want, args))
    gencode = [a for a in args if a.startswith("--with-nvcc-gencode=")]
    if on["cuda"]:
        want = "--with-nvcc-gencode=" + ",".join("sm_" + a for a in archs)
        check(gencode == [want], "%s: %s expected, got %s" % (what, want, gencode))
        for sm in want.split("=", 1)[1].split(","):  # configure: sm_NN[a|f], NN digits
            check(re.match(r"^sm_\d+[a-z]?$", sm), "%s: %s is not an architecture configure takes" % (what, sm))
os.remove(os.path.join(mpi_with_exec, "bin", "mpiexec"))
os.rmdir(os.path.join(mpi_with_exec, "bin"))
os.rmdir(mpi_with_exec)
os.rmdir(tmp)

# the run environment
pkgdata_py = re.search(r"tlmpipythondir\s*=\s*\$\(pkgdatadir\)/(\S+)", read(os.path.join(top, "python", "local.mk")))
check(pkgdata_py is not None, "python/local.mk: tlmpipythondir = $(pkgdatadir)/...")
env = Env()
inst = Tlmpi(Spec({"cuda": True, "nccl": True, "hwloc": True}, ("90",), "/spack/opt/openmpi"))
if check(hasattr(inst, "setup_run_environment"), "setup_run_environment()"):
    inst.setup_run_environment(env)
    want_py = os.path.join("/spack/opt/tlmpi", "share", "tlmpi", pkgdata_py.group(1) if pkgdata_py else "python")
    check(("prepend_path", "PYTHONPATH", want_py) in env.ops, "PYTHONPATH gets %s: %s" % (want_py, env.ops))
    check(("set", "TLMPI_LIBRARY", "/spack/opt/tlmpi/lib/libtlmpi.so") in env.ops,
          "TLMPI_LIBRARY names lib/libtlmpi.so: %s" % env.ops)

# under Spack >= 1.0 AutotoolsPackage comes from spack_repo.builtin.build_systems.autotools
class AutotoolsPackageV2(AutotoolsPackage):
    pass


names = ["spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems",
         "spack_repo.builtin.build_systems.autotools"]
for n in names:
    sys.modules[n] = types.ModuleType(n)
sys.modules[names[-1]].AutotoolsPackage = AutotoolsPackageV2
try:
    mod2 = load("tlmpi_recipe_v2")
    check(issubclass(mod2.Tlmpi, AutotoolsPackageV2), "with spack_repo.builtin.build_systems.autotools present, "
          "Tlmpi derives from its AutotoolsPackage")
except Exception as e:
    check(False, "importing the recipe with spack_repo present: %s: %s" % (type(e).__name__, e))
for n in names:
    del sys.modules[n]

print("spack_recipe: %s: %d checks, %d failures" % ("PASS" if fails == 0 else "FAIL", checks, fails))
sys.exit(1 if fails else 0)
