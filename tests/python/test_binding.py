"""The Python package `redist` (python/, docs/python.md): its tests in
python/tests run on every rank of an MPI job, on 1 to 4 ranks, and the examples
in examples/ run as written. Skipped where the build has no Python extension:
the sanitizer builds (`make check-sanitize`, REDIST_BUILD=build-asan) leave it
out, since an extension built with AddressSanitizer cannot load into an
uninstrumented python without LD_PRELOAD of the ASan runtime."""
import glob
import os
import subprocess
import sys

import pytest

from conftest import BUILD, MPIRUN, ROOT

PKG = BUILD / "python"
HAVE_EXTENSION = bool(glob.glob(str(PKG / "redist" / "_core*.so")))
pytestmark = pytest.mark.skipif(
    not HAVE_EXTENSION,
    reason=f"no Python extension in {PKG} (sanitizer builds leave it out: an ASan-built module cannot load into an "
           "uninstrumented python without LD_PRELOAD; elsewhere: nanobind missing, run scripts/setup.sh)")


def launch(ranks, args, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PKG), str(ROOT / "python" / "tests")]))
    cmd = [str(MPIRUN), "-np", str(ranks), sys.executable] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_binding_under_mpirun(ranks):
    r = launch(ranks, ["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", "--color=no",
                       str(ROOT / "python" / "tests" / "test_redist_mpi.py")])
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-4000:]


@pytest.mark.parametrize("example,ranks", [("block_cyclic.py", 2), ("block_cyclic.py", 3),
                                           ("repartition_3d.py", 4)])
def test_examples(example, ranks):
    r = launch(ranks, [str(ROOT / "examples" / example)])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "ok" in r.stdout


def test_readme_python_example():
    """The README's section "Python" runs as written on 2 ranks."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Python")
    code = text[text.index("```python", start) + len("```python"): text.index("```", text.index("```python", start) + 9)]
    script = BUILD / "readme_example.py"
    script.write_text(code)
    r = launch(2, [str(script)])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert r.stdout.split() == ["True"], r.stdout


def test_calls_after_finalize_raise(tmp_path):
    """After MPI.Finalize() make_plan, execute, zeros and gather aborted the job in
    Open MPI's first call (a helper's trial), where predictions() raised: each
    raises redist.Error now, on 1 and 2 ranks, and the job ends normally."""
    script = tmp_path / "after_finalize.py"
    script.write_text('''
import numpy as np
import redist
from mpi4py import MPI
size = MPI.COMM_WORLD.Get_size()
spec = f"8x8 tile=4x4 block_cyclic grid=1x{size}"
plan = redist.make_plan(spec, spec)
a = redist.zeros(spec, storage="heap")
b = redist.zeros(spec, storage="heap")
MPI.Finalize()
calls = {"make_plan": lambda: redist.make_plan(spec, spec), "execute": lambda: plan.execute(a, b),
         "zeros": lambda: redist.zeros(spec, storage="heap"), "gather": lambda: a.gather()}
for name, call in calls.items():
    try:
        call()
        print(name, "returned")
    except redist.Error as e:
        print(name, "raised", "after MPI" in str(e) and "Finalize" in str(e))
''')
    for ranks in (1, 2):
        r = launch(ranks, [str(script)])
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        for name in ("make_plan", "execute", "zeros", "gather"):
            assert r.stdout.count(f"{name} raised True") == ranks, r.stdout + r.stderr[-3000:]
