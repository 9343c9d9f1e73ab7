#!/usr/bin/env bash
# `make check-sanitize` (docs/testing.md): the unit, MPI and command-line tests
# built with AddressSanitizer + UndefinedBehaviorSanitizer (Debug, -O1), then the
# threaded tests (the task runtime, plans executed from several threads) built
# with ThreadSanitizer. Any finding fails the run. Only Open MPI's internals are
# left out (docs/testing.md): scripts/sanitizers/lsan.supp, and TSan's
# ignore_noninstrumented_modules.
# Not run under sanitizers: the labels `long` (make check-long, minutes of
# random cases that make test samples) and `large` (test_large: 4.2 GB per rank,
# which ASan's shadow memory and quarantine would more than double).
# Usage: scripts/check_sanitize.sh [asan|tsan|all]   (default all)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
jobs=${JOBS:-2}
supp="$here/scripts/sanitizers"

# Open MPI keeps the components it opened at MPI_Init loaded, so that stacks
# through them can be symbolized and matched by the suppressions.
export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1

# Under both sanitizers every random-case test runs a quarter of its cases, and
# test_threads a quarter of its rounds (tests/common/env_count.hpp).
export REDIST_CASE_PERCENT=${REDIST_CASE_PERCENT:-25}

# -g1: line tables and function names, all the sanitizers' stacks need; compiles
# faster and links smaller programs than -g.
configure_build() {  # dir sanitizers: configure; build everything for asan
  local dir=$1 san=$2
  cmake -S "$here" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
        -DREDIST_SANITIZE="$san" >/dev/null
  [[ $san == thread ]] || cmake --build "$dir" -j "$jobs"
}

# Prints two ctest name regexes for the tests ctest selects with the given
# arguments (run in a build folder; fails if it cannot list them): each test
# family (NAME_<P>ranks) at its smallest rank count of 2 or more (or its only
# one), and at its next count.
two_counts() {
  local first second
  read -r first second < <(ctest --show-only=json-v1 "$@" | "$here/.venv/bin/python" -c '
import collections, json, re, sys
families = collections.defaultdict(dict)
for t in json.load(sys.stdin)["tests"]:
    m = re.fullmatch(r"(.*)_(\d+)ranks", t["name"])
    family, ranks = (m.group(1), int(m.group(2))) if m else (t["name"], 0)
    families[family][ranks] = t["name"]
first, second = [], []
for f in families.values():
    counts = [c for c in sorted(f) if c >= 2] or sorted(f)
    first.append(f[counts[0]])
    second += [f[c] for c in counts[1:2]]
print("^(" + "|".join(sorted(first)) + ")$", "^(" + "|".join(sorted(second)) + ")$")')
  [[ $first == "^("?*")\$" && $second == "^("?*")\$" ]] ||
    { echo "check_sanitize.sh: could not list the tests (ctest --show-only $*)" >&2; exit 1; }
  echo "$first $second"
}

if [[ $what == asan || $what == all ]]; then
  echo "[${SECONDS} s] == AddressSanitizer + UndefinedBehaviorSanitizer: unit and MPI tests (build-asan)"
  configure_build "$here/build-asan" address,undefined
  export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd "$here/build-asan"
  # Each MPI test family runs at two rank counts under ASan and UBSan (make test
  # runs every count without them): its smallest count of 2 or more, and the next
  # one (3 ranks for most, so that ragged and odd cases are seen; 4 where a
  # family starts at 3), with a quarter of each test's random cases
  # (REDIST_CASE_PERCENT, tests/common/env_count.hpp). Leaks are checked where
  # a leak report can be trusted and paid for (docs/testing.md, "Leaks: where they
  # are checked"):
  # - each MPI test family at its first count, with the slow unwinder: Open MPI's
  #   libraries have no frame pointers, and only full stacks reach the frames
  #   lsan.supp names. It records a stack of 24 frames for every malloc: 4-6x
  #   slower than the fast unwinder;
  # - the unit tests (no MPI), with the fast unwinder: their stacks are redist's;
  # - each family at its second count with the fast unwinder and no leak check:
  #   memory errors and undefined behaviour only.
  tests=$(two_counts -L mpi -LE "long|large")
  read -r leak_tests other_tests <<< "$tests"
  echo "[${SECONDS} s] -- unit tests, leaks checked (fast unwinder)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    ctest --output-on-failure -j "$jobs" --timeout 1200 -LE "mpi|long|large"
  echo "[${SECONDS} s] -- MPI tests at 2 ranks (or their smallest count), leaks checked (slow unwinder)"
  ASAN_OPTIONS=fast_unwind_on_malloc=0:malloc_context_size=24:detect_leaks=1:abort_on_error=0 \
    ctest --output-on-failure -j "$jobs" --timeout 1200 -R "$leak_tests"
  echo "[${SECONDS} s] -- MPI tests at their next rank count (3, or 4), memory errors and undefined behaviour only"
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
    ctest --output-on-failure -j "$jobs" --timeout 1200 -R "$other_tests"
  cd "$here"
  # The command-line tests start the redist programs under mpirun: memory errors
  # and undefined behaviour (the library's leaks are checked above).
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 REDIST_BUILD="$here/build-asan" \
    "$here/.venv/bin/python" -m pytest -q "$here/tests/python"
  unset LSAN_OPTIONS UBSAN_OPTIONS
fi

if [[ $what == tsan || $what == all ]]; then
  echo "[${SECONDS} s] == ThreadSanitizer: threaded tests (build-tsan, ctest labels runtime and threads)"
  # Only the programs of those tests are built: the rest of the suite is single-threaded.
  configure_build "$here/build-tsan" thread
  cmake --build "$here/build-tsan" -j "$jobs" --target threaded_tests
  # Open MPI is not instrumented: TSan cannot see its own synchronization, and
  # would report as races the copies and locks it makes from whichever thread
  # progresses MPI. It ignores what uninstrumented libraries do through the
  # functions it intercepts (memcpy, mutexes); every access of redist's own code
  # is still checked. No suppression is needed.
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1
  # Each family at its first two rank counts (as under ASan: 2 and 3 ranks for
  # most), with a quarter of the random cases and rounds (REDIST_CASE_PERCENT).
  cd "$here/build-tsan"
  tests=$(two_counts -L "runtime|threads")
  read -r first second <<< "$tests"
  ctest --output-on-failure -j "$jobs" --timeout 1200 -R "$first|$second"
fi
echo "[${SECONDS} s] check_sanitize.sh: done"
