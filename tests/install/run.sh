#!/bin/bash
# The install test (ctest `install_consumer`, docs/c_api.md "Install"): installs
# the build tree BUILD into a temporary prefix, builds tests/install/consumer
# against it (CMake package and pkg-config) and runs its five programs on 2 ranks;
# then the same against the build tree itself, not installed (CMAKE_PREFIX_PATH
# and PKG_CONFIG_PATH = BUILD: redistTargets.cmake and redist-uninstalled.pc).
#   run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
consumer() {  # consumer NAME PREFIX_PATH PKG_CONFIG_DIR LIBRARY_DIR
  local out="$tmp/$1"
  PKG_CONFIG_PATH="$3${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
    cmake -S "$src/tests/install/consumer" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$2" > "$out.configure.log" 2>&1 || { cat "$out.configure.log"; exit 1; }
  cmake --build "$out" > "$out.build.log" 2>&1 || { cat "$out.build.log"; exit 1; }
  # The pkg-config programs find libredist_scalapack.so through the library path.
  for prog in cxx_package c_package cxx_pkgconfig c_pkgconfig cxx_apps; do
    echo "== $1: $prog"
    LD_LIBRARY_PATH="$4${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$src/scripts/mpirun.sh" -np 2 "$out/$prog"
  done
}
consumer installed "$tmp/prefix" "$tmp/prefix/lib/pkgconfig" "$tmp/prefix/lib"
consumer build-tree "$build" "$build" "$build/src"
grep -q "$build" "$tmp/build-tree/CMakeCache.txt"  # it used the build tree, not an installed copy
echo "install test: 5 programs built against the installed tree and 5 against the build tree, every element right"
