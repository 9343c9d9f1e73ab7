#!/usr/bin/env bash
# Installs everything redist needs on Debian 12 (idempotent; quick when all is present).
# Debian packages: compilers (C++, Fortran for the drop-ins' Fortran test), CMake, Ninja,
# Open MPI, GoogleTest, ScaLAPACK, OpenBLAS, LAPACKE.
# Python: a venv in .venv with pytest, numpy and matplotlib, and what the Python
# binding (python/, docs/python.md) builds with: nanobind and scikit-build-core,
# and mpi4py compiled from source with Debian's mpicc (so that it and redist use
# the same Open MPI). A .pth file puts build/python (the binding that `make
# build` compiles) on the venv's path: `import redist` works after `make build`.
#
#   scripts/setup.sh          what `make demo` and `make test` need
#   scripts/setup.sh docs     also graphviz (`dot`: docs/taskgraph.md's task graph picture)
#   scripts/setup.sh fuzz     also clang-14, libFuzzer's runtime (libclang-rt-14-dev:
#                             libclang_rt.fuzzer*.a is not in clang-14 itself) and
#                             llvm-14 (llvm-symbolizer, for sanitizer stacks): `make fuzz`
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

pkgs=(g++ gfortran cmake ninja-build make pkg-config
      libopenmpi-dev openmpi-bin
      libgtest-dev googletest
      libscalapack-openmpi-dev libopenblas-dev liblapacke-dev
      libhwloc-dev
      python3 python3-venv python3-pip)
for extra in "$@"; do
  case "$extra" in
    fuzz) pkgs+=(clang-14 libclang-rt-14-dev llvm-14) ;;
    docs) pkgs+=(graphviz) ;;
    *) echo "setup.sh: unknown extra '$extra' (known: fuzz, docs)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv="$here/.venv"
pyreq=(pytest numpy matplotlib nanobind scikit-build-core)
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating Python venv in .venv"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import pytest, numpy, matplotlib, nanobind, scikit_build_core" 2>/dev/null; then
  echo "setup: installing Python packages: ${pyreq[*]}"
  "$venv/bin/pip" install -q --disable-pip-version-check "${pyreq[@]}"
fi
# mpi4py from its source, built by Debian's mpicc: a binary wheel may carry or
# expect another MPI library than the Open MPI that redist links.
if ! "$venv/bin/python" -c "import mpi4py" 2>/dev/null; then
  echo "setup: building mpi4py against Debian's Open MPI"
  MPICC=mpicc "$venv/bin/pip" install -q --disable-pip-version-check --no-binary=mpi4py mpi4py
fi
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "${REDIST_BUILD_DIR:-$here/build}/python" > "$site/redist-build.pth"

