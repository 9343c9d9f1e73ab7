#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (fuzz/) with clang-14, ASan and UBSan in
# build-fuzz/ and runs each for a fixed time (README, "Tests").
#
#   scripts/fuzz.sh                       every target, FUZZ_SECONDS each (default 60)
#   FUZZ_SECONDS=3600 scripts/fuzz.sh fuzz_plan     one target, longer
#
# Environment: FUZZ_SECONDS (per target), FUZZ_TIMEOUT (seconds one input may take
# before it counts as a hang, default 10), FUZZ_RSS_MB (memory limit, default
# 2048), FUZZ_BUILD (build folder, default build-fuzz), FUZZ_ARGS (more libFuzzer
# options, e.g. -use_value_profile=1), JOBS (build jobs, default 2).
#
# Inputs found interesting are kept in $FUZZ_BUILD/corpus/<target>/ (a later run
# goes on from them); the seeds are written from the docs each run
# (scripts/fuzz_corpus.py). A crash, a UBSan or ASan report, a leak, a hang or a
# wrong plan (the targets' own checks) makes the script fail; the input is saved
# in $FUZZ_BUILD/crashes/<target>/ and the command replaying it is printed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

seconds=${FUZZ_SECONDS:-60}
timeout=${FUZZ_TIMEOUT:-10}
rss=${FUZZ_RSS_MB:-2048}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}
targets=("$@")
((${#targets[@]})) || targets=(fuzz_spec fuzz_region fuzz_plan fuzz_plan_gen)

bash scripts/setup.sh fuzz
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DREDIST_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
rm -rf "$build/seeds"
python3 scripts/fuzz_corpus.py "$build/seeds"

# Symbolized stacks in reports; a report is an error even if the process recovered.
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$symbolizer}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=0
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$crashes" "$build/logs" "$build/seeds/$t"  # fuzz_plan_gen: no text seeds
  echo "== $t: ${seconds} s (log: $log)"
  # shellcheck disable=SC2086
  set +e
  "$build/fuzz/$t" "$corpus" "$build/seeds/$t" -dict=fuzz/redist.dict -max_total_time="$seconds" \
    -timeout="$timeout" -rss_limit_mb="$rss" -artifact_prefix="$crashes/" -print_final_stats=1 \
    ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ncorpus=$(find "$corpus" -type f | wc -l)
  line=$(printf '%-12s %10s inputs %7s/s  cov %5s  corpus %5s' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$ncorpus")
  if [ "$rc" -ne 0 ]; then
    failed=1
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    tail -n 60 "$log"
    echo "== $t FAILED (exit $rc); the input: ${artifact:-see $log}"
    [ -n "$artifact" ] && echo "   replay: $build/fuzz/$t $artifact"
    line+="  FAILED: ${artifact:-see $log}"
  fi
  summary+=("$line")
done
echo "== fuzz summary (${seconds} s per target)"
printf '%s\n' "${summary[@]}"
exit "$failed"
