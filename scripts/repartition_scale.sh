#!/usr/bin/env bash
# Paper 003 at its scale without MPI (docs/benchmarks.md, "repartition"):
# 3000^3 and 6000^3 doubles on 1024, 2048 and 4096 simulated ranks (a 3-D grid
# of blocks), 32^3 patches, greedy and balanced placement. `redist plan` plans
# the middle rank of the grid and prints the placement's figures over all ranks
# (moved volume, patches per rank, imbalance), that rank's messages, plan time
# and plan memory, and with a calibration file (REDIST_CALIBRATION or the
# default) the cost model's time per strategy (segment = per patch, p2p = per
# rank). Also the peak memory of the process (GNU time).
#
#   scripts/repartition_scale.sh [BUILD_DIR] [SIZES] [RANKS]
set -euo pipefail
build=${1:-build}
sizes=${2:-"3000 6000"}
ranks=${3:-"1024 2048 4096"}
predict=()
cal=${REDIST_CALIBRATION:-$HOME/.cache/redist/calibration.json}
[[ -r $cal ]] && predict=(--predict --calibration "$cal")
for n in $sizes; do
  for p in $ranks; do
    case $p in
      1024) g=(16 8 8) ;;
      2048) g=(16 16 8) ;;
      4096) g=(16 16 16) ;;
      *) echo "ranks must be 1024, 2048 or 4096" >&2; exit 2 ;;
    esac
    grid="${g[0]}x${g[1]}x${g[2]}"
    tile="$(( (n + g[0] - 1) / g[0] ))x$(( (n + g[1] - 1) / g[1] ))x$(( (n + g[2] - 1) / g[2] ))"
    src="${n}x${n}x${n} tile=$tile block_cyclic grid=$grid"
    mid=$(( ((g[0] / 2) * g[1] + g[1] / 2) * g[2] + g[2] / 2 ))
    for rule in greedy balanced; do
      echo "== ${n}^3, $p ranks ($grid), 32^3 patches, $rule, rank $mid"
      /usr/bin/time -f "peak memory %M KB, wall %e s" "$build/apps/redist" plan "$src" \
        "${n}x${n}x${n} tile=32x32x32 $rule of=($src)" --ranks "$p" --rank "$mid" --top 0 "${predict[@]}" 2>&1 |
        grep -E "^rank|^placement|^planning|^memory|^  (segment|p2p) |peak memory" || true
    done
  done
done
