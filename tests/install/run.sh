#!/bin/bash
# The install test (ctest `install_consumer`, docs/c_api.md "Install"): installs
# the build tree BUILD into a temporary prefix, builds tests/install/consumer
# against it (CMake package and pkg-config) and runs its five programs on 2 ranks.
#   run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
# The pkg-config programs find libredist_scalapack.so through the library path.
export LD_LIBRARY_PATH="$tmp/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for prog in cxx_package c_package cxx_pkgconfig c_pkgconfig cxx_apps; do
  echo "== $prog"
  "$src/scripts/mpirun.sh" -np 2 "$tmp/consumer/$prog"
done
echo "install test: 5 programs built against the installed tree, every element right"
