// `redist repartition`: paper 003's experiment on the launched ranks. A 3-D
// volume split evenly over a 3-D rank grid is repartitioned onto an imposed
// patch grid, each patch whole on one rank, placed greedy or balanced
// (src/layout/placement.cpp), moved per patch (`segment`: one non-blocking
// message per patch piece, started as soon as it is packed) or per rank (`p2p`:
// one message per peer). Prints the moved volume, the load per rank after, the
// imbalance (max/mean) and the times; verifies every element of every patch.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>

#include "cli.hpp"
#include "harness/case.hpp"
#include "redist/redist.hpp"

namespace redist::cli {
namespace {

const char* kUsage = R"USAGE(usage: mpirun -np P redist repartition [options]

Paper 003: a 3-D volume of doubles split evenly over a 3-D grid of the P ranks
(one block per rank) is repartitioned onto an imposed patch grid; each patch
ends up whole on one rank. Placement (which rank gets a patch):
  greedy    the rank holding the patch's largest part (ties: the lowest rank);
            fully contained patches stay: the least data moved
  balanced  every rank gets floor(n/P) or ceil(n/P) of the n patches, moving
            the least data among such assignments (a min-cost flow)
Communication:
  per-patch one non-blocking message per patch piece, sent as soon as packed
            (the `segment` strategy)
  per-rank  everything for a peer packed into one message (the `p2p` strategy)
Prints per placement: patches (shared ones span ranks), the volume moved, the
load per rank after (patches, elements), the imbalance max/mean, and the median
and minimum time of each communication (interleaved repetitions, slowest rank),
with every element of every patch verified.

options:
  --shape XxYxZ      the volume (default 128x128x128)
  --grid AxBxC       the rank grid, A*B*C = P (default: the most ranks holding
                     data, then the most cubic blocks)
  --patch XxYxZ      the patch size (default 48x48x48: patches that straddle the
                     rank blocks; patches that tile each block exactly move
                     nothing); edge patches are clipped
  --placement W      greedy, balanced or both (default both)
  --comm W           per-patch, per-rank or both (default both)
  --reps N           timed repetitions (default 5)
  --help             this text

The layouts are spec strings (docs/spec.md): the target is
  "SHAPE tile=PATCH greedy of=(SOURCE)"; `redist plan SOURCE TARGET --ranks P
--rank R` gives the placement's figures and rank R's plan without MPI at any
scale (scripts/repartition_scale.sh: 6000^3 on 4096 ranks); without --rank it
plans every rank in turn, P times one rank's planning time.

example:
  mpirun -np 4 redist repartition --shape 256x256x256 --patch 48x48x48
)USAGE";

// "AxBxC" -> 3 positive integers.
Coord parse_3d(const std::string& opt, const std::string& v) {
  Coord c(3);
  size_t pos = 0;
  for (int d = 0; d < 3; ++d) {
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(v.substr(pos), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    pos += used;
    if (used == 0 || x < 1 || (d < 2 && (pos >= v.size() || v[pos++] != 'x')))
      detail::fail(opt, " must be three positive integers joined by 'x' (e.g. 64x64x64), got '", v, "'");
    c[d] = x;
  }
  if (pos != v.size())
    detail::fail(opt, " must be three positive integers joined by 'x' (e.g. 64x64x64), got '", v, "'");
  return c;
}

// ceil(a / b) for a >= 0, b >= 1, without a + b (extents up to 2^63 - 1).
index_t ceil_div(index_t a, index_t b) { return a / b + (a % b != 0); }

// One block per rank of `grid`: ceil(extent / grid) per dimension (the last block
// smaller when the grid does not divide the extent; at least 1).
Coord blocks_for(const Coord& shape, const Coord& grid) {
  Coord block(3);
  for (int d = 0; d < 3; ++d) block[d] = std::max<index_t>(1, ceil_div(shape[d], grid[d]));
  return block;
}

// Per dimension, how many ranks of the grid such blocks reach: fewer than the
// grid's where blocks of ceil(extent / grid) run out early (9 cells on 4: 3, 3, 3, 0).
Coord filled_by(const Coord& shape, const Coord& block) {
  Coord filled(3);
  for (int d = 0; d < 3; ++d) filled[d] = ceil_div(shape[d], block[d]);
  return filled;
}

// The rank grid a x b x c = p for `shape`, one block of ceil(extent / grid) per
// rank: the most ranks holding data first (a grid wider than an extent, or blocks
// that leave the last ranks none, as 9 cells in blocks of 3 on 4 ranks, do not),
// then the most cubic block (largest edge / smallest), then the larger factor in
// the earlier dimension (128^3 on 4 ranks: 2x2x1, as the grid by prime factors
// gave). A 1x1x2 volume on 4 ranks had 2x2x1, and 3 ranks held nothing.
Coord default_grid(int p, const Coord& shape) {
  Coord best{p, 1, 1};
  long long best_hold = -1;
  double best_ratio = 0;
  for (int a = p; a >= 1; --a) {
    if (p % a) continue;
    for (int b = p / a; b >= 1; --b) {
      if ((p / a) % b) continue;
      const Coord g{a, b, p / a / b};
      const Coord tile = blocks_for(shape, g);
      const long long hold = filled_by(shape, tile).volume();
      index_t lo = tile[0], hi = tile[0];
      for (int d = 1; d < 3; ++d) lo = std::min(lo, tile[d]), hi = std::max(hi, tile[d]);
      const double ratio = double(hi) / double(lo);
      if (hold > best_hold || (hold == best_hold && ratio < best_ratio * (1 - 1e-12)))
        best = g, best_hold = hold, best_ratio = ratio;
    }
  }
  return best;
}

std::vector<std::string> choices(const Args& a, const char* opt, const std::string& x, const std::string& y) {
  const std::string v = a.get(opt, "both");
  if (v == "both") return {x, y};
  if (v == x || v == y) return {v};
  detail::fail(opt, " must be ", x, ", ", y, " or both, got '", v, "'");
}

}  // namespace

int cmd_repartition(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  return run_with_mpi(argc, argv, "repartition", [&](int rank, int size) {
    const Args a = parse_args(argc, argv, 2, {"--shape", "--grid", "--patch", "--placement", "--comm", "--reps"},
                              {"--help"});
    if (!a.positional.empty()) detail::fail("repartition takes options only, got '", a.positional[0], "'");
    const Coord shape = parse_3d("--shape", a.get("--shape", "128x128x128"));
    const Coord grid = a.has("--grid") ? parse_3d("--grid", a.get("--grid", "")) : default_grid(size, shape);
    const Coord patch = parse_3d("--patch", a.get("--patch", "48x48x48"));
    index_t ranks = 0;  // the product may overflow (it once read "0 ranks", or passed)
    if (__builtin_mul_overflow(grid[0], grid[1], &ranks) || __builtin_mul_overflow(ranks, grid[2], &ranks))
      detail::fail("--grid ", grid.str(), " has more ranks than the ", size, " launched");
    if (ranks != size) detail::fail("--grid ", grid.str(), " has ", ranks, " ranks, ", size, " are launched");
    const auto placements = choices(a, "--placement", "greedy", "balanced");
    const auto comms = choices(a, "--comm", "per-patch", "per-rank");
    harness::MeasureOptions mo;
    mo.reps = static_cast<int>(a.get_int("--reps", 5, 1, INT_MAX));

    const Coord block = blocks_for(shape, grid);
    const std::string src_spec = shape.str() + " tile=" + block.str() + " block_cyclic grid=" + grid.str();
    const Layout src = Layout::parse(src_spec);
    const index_t volume = shape.volume();  // on every rank: an overflow is every rank's error, not rank 0's alone
    // The storage before the placement: placing the patches of a volume too large
    // to hold took 6-11 s before CaseRun's memory check refused it (a helper's
    // trial). Source and target hold the volume once each, over the job's nodes.
    const double storage = 2.0 * 8.0 * double(volume);
    if (const harness::JobMemory job = harness::job_memory(MPI_COMM_WORLD); storage > job.bytes)
      detail::fail("not enough memory: the volume ", shape.str(), " of doubles needs ", human_bytes(storage),
                   " for its source and target copies, the job's ", counted(job.nodes, "node has", "nodes have"), " ",
                   human_bytes(job.bytes), "; give a smaller --shape");
    if (rank == 0)
      std::printf("redist repartition on %s: %s doubles (%s), rank grid %s, patches %s\n  source  %s\n",
                  counted(size, "rank", "ranks").c_str(), shape.str().c_str(), human_bytes(double(volume) * 8).c_str(), grid.str().c_str(),
                  patch.str().c_str(), src.spec().c_str());
    // Blocks of ceil(extent / grid) can leave the grid's last ranks of a dimension
    // without data (9 cells on a grid of 4: 3, 3, 3, 0): said, not silent.
    const Coord filled = filled_by(shape, block);
    if (rank == 0 && filled.volume() < size) {
      const Coord dflt = default_grid(size, shape);
      const index_t dflt_filled = filled_by(shape, blocks_for(shape, dflt)).volume();
      const index_t idle = size - filled.volume();
      std::printf("note     %s %s no data: blocks of %s fill %s of the rank grid %s%s\n",
                  counted(idle, "rank", "ranks").c_str(), idle == 1 ? "holds" : "hold", block.str().c_str(),
                  filled.str().c_str(), grid.str().c_str(),
                  dflt_filled > filled.volume() ? (" (the default grid, " + dflt.str() + ", fills more)").c_str() : "");
    }
    bool ok = true;
    for (const std::string& rule : placements) {
      const Layout dst = Layout::parse(shape.str() + " tile=" + patch.str() + " " + rule + " of=(" + src_spec + ")");
      // make_plan validates both layouts collectively before the summary walks them.
      harness::CaseRun run(src, dst, Region::whole(shape), MPI_COMM_WORLD);
      for (const std::string& c : comms) run.add_strategy(c == "per-patch" ? "segment" : "p2p");
      const harness::CaseResult res = run.measure(mo);
      ok = ok && res.ok();
      if (rank != 0) continue;
      const PlacementSummary s = placement_summary(dst);
      const auto [lo, hi] = std::minmax_element(s.load.begin(), s.load.end());
      const auto [elo, ehi] = std::minmax_element(s.load_elements.begin(), s.load_elements.end());
      const double mean = double(s.patches) / size, emean = double(s.total_elements) / size;
      std::printf("\n%s placement\n  target  %s\n", rule.c_str(), dst.spec().c_str());
      std::printf("  patches %lld (%lld shared by several ranks); moved %lld elements, %s of %s (%.1f%%); plan %s\n",
                  (long long)s.patches, (long long)s.shared_patches, (long long)s.moved_elements,
                  human_bytes(double(s.moved_elements) * 8).c_str(),
                  human_bytes(double(s.total_elements) * 8).c_str(),
                  s.total_elements ? 100.0 * double(s.moved_elements) / double(s.total_elements) : 0.0,
                  human_time(res.plan_seconds).c_str());
      std::printf("  load after: patches min %lld max %lld mean %.2f, imbalance (max/mean) %.3f; "
                  "elements min %lld max %lld, imbalance %.3f\n",
                  (long long)*lo, (long long)*hi, mean, mean > 0 ? double(*hi) / mean : 0.0, (long long)*elo,
                  (long long)*ehi, emean > 0 ? double(*ehi) / emean : 0.0);
      if (size <= 16) {
        std::printf("  %5s %8s %12s\n", "rank", "patches", "elements");
        for (int r = 0; r < size; ++r)
          std::printf("  %5d %8lld %12lld\n", r, (long long)s.load[r], (long long)s.load_elements[r]);
      }
      std::printf("  %-22s %12s %12s %10s  %s\n", "communication", "median", "min", "messages", "verified");
      for (const harness::MethodResult& m : res.methods) {
        const std::string label = m.name == "segment" ? "per-patch (segment)" : "per-rank (p2p)";
        const std::string v = !m.verified ? "-" : m.wrong ? "FAILED (" + std::to_string(m.wrong) + " wrong)"
                                                          : "ok (" + std::to_string(m.checked) + " elements)";
        const long long msgs = m.name == "segment" ? (long long)res.stats.segments : (long long)res.stats.messages;
        std::printf("  %-22s %12s %12s %10lld  %s\n", label.c_str(), human_time(m.median).c_str(),
                    human_time(m.min).c_str(), msgs, v.c_str());
      }
      const harness::MethodResult *pp = res.find("segment"), *pr = res.find("p2p");
      if (pp && pr && pr->median > 0)
        std::printf("  per-patch / per-rank median time: %.3f (< 1: per-patch faster)\n", pp->median / pr->median);
    }
    return ok ? 0 : 1;
  });
}

}  // namespace redist::cli
