#!/usr/bin/env python3
"""Layers point one way (docs/architecture.md): fails on an #include from a lower
layer to a higher one, or to a layer it does not stand on.

    python3 tests/layers.py [SOURCE_DIR]

Each file's layer comes from its path; `#include "..."` lines are resolved the way
the build does (include/, src/, then the file's own folder). Runs as the ctest
`layers`; before checking the tree it checks that it catches a planted upward
include (in memory), so that a broken checker cannot pass silently.
"""
import pathlib
import re
import sys

# layer -> the layers it stands on directly (the closure is allowed).
STANDS_ON = {
    "error": [],
    "geometry": ["error"],
    "layout": ["geometry"],
    "plan": ["layout"],
    "kernels": ["geometry"],
    "mpi": ["error"],
    "cost": ["plan", "mpi", "kernels"],
    "exec": ["cost", "runtime"],     # the taskgraph strategy runs on the task runtime
    "pattern": ["plan"],             # the serial oracle: no MPI, used by the planner's tests
    "harness": ["exec", "pattern"],
    "runtime": ["layout", "mpi"],    # the task runtime stands on the core's layouts only
    "cholesky": ["runtime"],         # an application of the runtime
    "qr": ["runtime"],               # the tile QR, an application of the runtime
    "gemm": ["runtime"],             # the tiled GEMM, an application of the runtime
    "apps": ["exec", "cholesky", "qr", "gemm"],  # redist::apps: the round trip (redist/apps.hpp)
    "capi": ["exec"],                # the C API (redist.h): a front end over exec
    "scalapack": ["exec"],           # the p?gemr2d drop-ins (scalapack.h): a front end over exec
    "python": ["exec"],              # the Python binding (python/src): a front end over exec
}

# First matching prefix wins. Files outside these (apps/, bench/, tests/) are the
# top: they may include anything.
PATHS = [
    ("include/redist/error.hpp", "error"),
    ("include/redist/geometry.hpp", "geometry"), ("include/redist/element.hpp", "geometry"),
    ("src/geometry/", "geometry"),
    ("include/redist/layout.hpp", "layout"), ("src/layout/", "layout"),
    ("include/redist/plan.hpp", "plan"), ("src/plan/", "plan"),
    ("src/kernels/", "kernels"),
    ("src/mpi/", "mpi"),
    ("include/redist/cost.hpp", "cost"), ("src/cost/", "cost"),
    ("include/redist/exec.hpp", "exec"), ("include/redist/groups.hpp", "exec"), ("include/redist/shm.hpp", "exec"), ("include/redist/redist.hpp", "exec"), ("src/exec/", "exec"),
    ("include/redist/redist.h", "capi"), ("src/capi/", "capi"),  # after redist.hpp: a prefix of it
    ("include/redist/scalapack.h", "scalapack"), ("include/redist/blacs.h", "scalapack"), ("src/scalapack/", "scalapack"),
    ("src/harness/pattern.", "pattern"),
    ("src/harness/", "harness"),
    ("include/redist/runtime/", "runtime"), ("src/runtime/", "runtime"),
    ("apps/cholesky/", "cholesky"),
    ("python/src/", "python"),
    ("apps/qr/", "qr"), ("apps/gemm/", "gemm"),
    ("include/redist/apps.hpp", "apps"), ("apps/roundtrip/", "apps"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(layer):
    seen, todo = set(), [layer]
    while todo:
        for d in STANDS_ON[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def layer_of(rel):
    for prefix, layer in PATHS:
        if rel.startswith(prefix):
            return layer
    return None


def resolve(root, src, name):
    for base in (root / "include", root / "src", root / "apps", src.parent):
        p = base / name
        if p.is_file():
            return p.resolve()
    return None


def violations(root, sources):
    """sources: (path, text) pairs; path inside root."""
    out = []
    for f, text in sources:
        rel = f.relative_to(root).as_posix()
        mine = layer_of(rel)
        if mine is None:
            continue
        allowed = closure(mine) | {mine}
        for name in INCLUDE.findall(text):
            target = resolve(root, f, name)
            if target is None:
                continue
            theirs = layer_of(target.relative_to(root).as_posix())
            if theirs is None or theirs not in allowed:
                what = theirs or "the top (apps/bench/tests)"
                out.append(f"{rel}: #include \"{name}\": layer {mine} must not include {what}"
                           f" (it stands on {', '.join(sorted(closure(mine))) or 'nothing'})")
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]).resolve()
    # The checker must catch a planted violation (never written to disk): plan
    # including exec, the runtime including the planner, exec including the C API.
    planted = [(root / "src" / "plan" / "planted.cpp", '#include "redist/exec.hpp"\n'),
               (root / "src" / "runtime" / "planted.cpp", '#include "redist/plan.hpp"\n'),
               (root / "src" / "exec" / "planted.cpp", '#include "redist/redist.h"\n'),
               (root / "src" / "exec" / "planted2.cpp", '#include "../../python/src/common.hpp"\n')]
    if len(violations(root, planted)) != 4:
        print("layers.py: the self-test's upward include was not caught")
        return 1
    files = sorted(p for d in ("include", "src", "apps", "python") for p in (root / d).rglob("*")
                   if p.suffix in (".hpp", ".cpp", ".h", ".c"))
    bad = violations(root, [(f, f.read_text(errors="replace")) for f in files])
    for line in bad:
        print(line)
    print(f"layers.py: {len(files)} files, {len(bad)} includes that point the wrong way")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
