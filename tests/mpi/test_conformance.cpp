// Conformance suite: every strategy in the registry, random layouts of every kind (regular and
// irregular tiles, block_cyclic incl. k-cyclic and offsets, random, band, table,
// function ownerships; tile, local_array and tile_pointers storage), random regions
// (empty, one element, touching edges, whole), element sizes 1-16 and odd ones,
// 1-4 dimensions, and placements of a patch grid (paper 003). Oracle: pattern.hpp
// (each element's expected bytes computed
// serially from its global index). Checks every target element inside the region,
// every element outside it untouched, the source unchanged, and a second execute
// of the same plan.
#include <gtest/gtest.h>

#include "../common/mpi_util.hpp"
#include "../common/oracle_case.hpp"
#include "../common/random_cases.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

// Runs one case with one strategy; returns an empty string on success.
std::string run_case(const Layout& src, const Layout& dst, const Region& region, const std::string& ex,
                     const Options& opt) {
  OracleCase c(src, dst, region, world_rank(), opt.arithmetic);
  Plan plan = make_plan(src, dst, region, MPI_COMM_WORLD, opt);
  std::string err;  // every rank runs both executes (collectives) whatever it finds
  for (int rep = 0; rep < 2; ++rep) {
    plan.execute(c.src_blocks(), c.dst_blocks(), ex);
    if (err.empty()) err = c.check(detail::cat("rep ", rep));
    if (rep == 0) c.reset_target();  // the second run must write it all again
  }
  return err;
}

// Random cases [first, end) of tests/common/random_cases.hpp (REDIST_CASES,
// REDIST_SEED, REDIST_CASE); a failure prints the command that replays it.
void random_cases(const std::string& ex, int ncases, std::uint64_t seed, index_t max_message_bytes,
                  bool permute = false) {
  const int nranks = world_size();
  const CaseRange range = case_range(ncases, seed);
  Options opt;
  opt.max_message_bytes = max_message_bytes;
  for (int c = range.first; c < range.end; ++c) {
    Rng rng = case_rng(range.seed, c);  // same seed on every rank: every rank builds the same case
    const auto [src0, dst0, r] = random_case(rng, nranks, 4, 0, false, permute);
    const Layout src = with_rank_ld(src0, world_rank()), dst = with_rank_ld(dst0, world_rank());
    std::string err = run_case(src, dst, r, ex, opt);
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << world_rank() << " case " << c << " strategy " << ex
                             << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region "
                             << r.str() << "\n  " << err << "\n  replay: " << replay_command(range, c);
    if (!ok) return;
  }
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, RandomLayouts) { random_cases(GetParam(), 150, 2024, index_t{1} << 30); }

// Tiny message limit: every message and segment is split into many MPI messages.
TEST_P(Conformance, SplitMessages) { random_cases(GetParam(), 15, 77, 7); }

// Regions that permute dimensions (Region::axes: transposes in 2-D, any axis
// order in 3-D and 4-D), every layout kind and storage (docs/transforms.md).
TEST_P(Conformance, PermutedAxes) { random_cases(GetParam(), 80, 4242, index_t{1} << 30, /*permute=*/true); }

// target = alpha * op(source) + beta * target while copying (Options::arithmetic):
// random cases, half of them transposing (Region::axes), elements f32, f64, c64
// and c128, alpha and beta among 0, 1, -1 and others (complex ones for complex
// elements), conjugation, against the oracle's std::complex arithmetic bit for
// bit. A strategy that cannot apply it is refused by make_plan, on every rank,
// with an error naming those that can.
TEST_P(Conformance, Arithmetic) {
  const std::string ex = GetParam();
  bool can = false;
  for (const StrategyInfo& i : strategies()) can = can || (i.name == ex && i.arithmetic);
  const int nranks = world_size();
  const CaseRange range = case_range(60, 5151);
  const std::complex<double> reals[] = {0.0, 1.0, -1.0, 2.5, 0.75};
  const std::complex<double> complexes[] = {{0.5, -2.0}, {0.0, 1.0}, {-1.25, 0.5}};
  for (int c = range.first; c < range.end; ++c) {
    Rng rng = case_rng(range.seed, c);
    const ElementType type =
        std::vector<ElementType>{ElementType::f32, ElementType::f64, ElementType::c64, ElementType::c128}[uniform(rng, 0, 3)];
    const bool permute = uniform(rng, 0, 1) == 1;
    const auto [src0, dst0, r] = random_case(rng, nranks, 3, element_type_size(type), false, permute);
    const Layout src = with_rank_ld(src0, world_rank()), dst = with_rank_ld(dst0, world_rank());
    Options opt;
    Arithmetic& a = opt.arithmetic;
    a.type = type;
    auto pick = [&] {
      return is_complex(type) && uniform(rng, 0, 2) == 0 ? complexes[uniform(rng, 0, 2)] : reals[uniform(rng, 0, 4)];
    };
    a.alpha = pick();
    a.beta = pick();
    a.conjugate = is_complex(type) && uniform(rng, 0, 1) == 1;
    if (!can) {
      if (a.identity()) continue;
      opt.strategy = ex;
      std::string what;
      try {
        make_plan(src, dst, r, MPI_COMM_WORLD, opt);
      } catch (const Error& e) {
        what = e.what();
      }
      EXPECT_NE(what.find("cannot apply options.arithmetic"), std::string::npos) << what;
      EXPECT_NE(what.find("p2p"), std::string::npos) << what;
      return;  // one refusal shows it
    }
    std::string err = run_case(src, dst, r, ex, opt);
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "rank " << world_rank() << " case " << c << " strategy " << ex << "\n  src "
                             << src.spec() << "\n  dst " << dst.spec() << "\n  region " << r.str() << "\n  "
                             << a.str() << "\n  " << err << "\n  replay: " << replay_command(range, c);
    if (!ok) return;
  }
}

TEST_P(Conformance, PaperCaseSubmatrix) {
  // Paper 000 Fig. 1 in small: a submatrix at an offset, tiles 7x5 on one grid to
  // 4x9 tiles on another, ragged edges on both sides.
  const int p = world_size();
  Layout src = block_cyclic_layout({103, 97}, {7, 5}, {p, 1});
  Layout dst = block_cyclic_layout({88, 120}, {4, 9}, {1, p});
  Region r{{80, 90}, {20, 3}, {5, 29}};
  std::string err = run_case(src, dst, r, GetParam(), {});
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

// Contiguous runs on both sides of direct's packing threshold in one plan (260,
// 140, 120 and 82 rows of 8 bytes, tile storage to ScaLAPACK storage): `direct`
// reads the long ones row by row and has the short ones packed by the sender.
TEST_P(Conformance, LongAndShortRows) {
  constexpr index_t kPackBelow = 2048;  // bytes, private to src/exec/strategies/direct.cpp
  static_assert(260 * 8 >= kPackBelow && 140 * 8 < kPackBelow);
  const int p = world_size();
  Layout src = block_cyclic_layout({602, 40}, {400, 3}, {p, 1});
  Layout dst = block_cyclic_layout({602, 40}, {260, 9}, {1, p}, 8, StorageKind::local_array);
  std::string err = run_case(src, dst, Region::whole(src.shape()), GetParam(), {});
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

// Messages that are one run of storage on a side (p2p sends them from the
// source and receives them into the target as they are, cost/model.hpp
// storage_run): rank 0's whole array to the last rank (one run each side), a
// vector in blocks to blocks of another size, whole columns at offsets; also
// split into chunks of 100 bytes (not a multiple of the element), with
// target = 0.5 * source + 2 * target, where the receive side is unpacked, and
// for phased's rounds under a memory budget of 256 bytes (pieces of 128 bytes,
// each sent from or received into its place in the run).
TEST_P(Conformance, MessagesThatAreOneRun) {
  const int p = world_size();
  const std::string last = std::to_string(p - 1);
  const Layout whole = Layout::parse("97x61 tile=10x10 block_cyclic grid=1x1 storage=local_array");
  const Layout moved = Layout::parse("97x61 tile=7x9 block_cyclic grid=1x1 first=" + last + " storage=local_array");
  const Layout vec = block_cyclic_layout({1000}, {(1000 + p - 1) / p}, {p}, 8, StorageKind::local_array);
  const Layout vec2 = block_cyclic_layout({1000}, {(1000 + 2 * p - 1) / (2 * p) + 3}, {p}, 8, StorageKind::local_array);
  const Layout cols = Layout::parse("64x40 tile=64x" + std::to_string((40 + p - 1) / p) +
                                    " block_cyclic grid=1x" + std::to_string(p) + " storage=local_array");
  const Layout cols2 = Layout::parse("64x50 tile=64x7 block_cyclic grid=1x" + std::to_string(p) + " storage=local_array");
  struct One {
    Layout src, dst;
    Region region;
  };
  const std::vector<One> cases = {{whole, moved, Region::whole(whole.shape())},
                                  {vec, vec2, Region::whole(vec.shape())},
                                  {cols, cols2, Region{{64, 23}, {0, 9}, {0, 20}}}};
  for (size_t k = 0; k < cases.size(); ++k)
    for (int variant = 0; variant < 4; ++variant) {
      Options opt;
      if (variant == 1) opt.max_message_bytes = 100;
      if (variant == 3) {
        if (GetParam() != "phased" && GetParam() != "phased_sendrecv") continue;
        opt.max_buffer_bytes = 256;
        opt.strategy = GetParam();  // the plan's default (p2p) needs the whole volume
      }
      if (variant == 2) {
        opt.arithmetic.type = ElementType::f64;
        opt.arithmetic.alpha = 0.5, opt.arithmetic.beta = 2.0;
        bool can = false;
        for (const StrategyInfo& i : strategies()) can = can || (i.name == GetParam() && i.arithmetic);
        if (!can) continue;
      }
      std::string err = run_case(cases[k].src, cases[k].dst, cases[k].region, GetParam(), opt);
      EXPECT_TRUE(all_ok(err.empty())) << "case " << k << " variant " << variant << ": " << err;
    }
}

// ScaLAPACK's storage as pdgemr2d sees it: local arrays whose leading dimension
// differs on every rank (LLD > local rows, by 5 * rank + 1), on grids whose ranks
// are placed in reverse and rotated order (Cblacs_gridmap), ragged edges.
TEST_P(Conformance, PerRankLeadingDimensionAndRankMap) {
  const int p = world_size(), me = world_rank();
  std::vector<int> reversed(static_cast<size_t>(p)), rotated(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) reversed[i] = p - 1 - i, rotated[i] = (i + 1) % p;
  auto layout = [&](Coord shape, Coord tile, Coord grid, const std::vector<int>& map) {
    BlockCyclicParams bc;
    bc.grid = grid;
    bc.map = std::make_shared<const std::vector<int>>(map);
    const Layout l(shape, {DimPartition::regular(shape[0], tile[0]), DimPartition::regular(shape[1], tile[1])},
                   Ownership::block_cyclic(bc), Storage{StorageKind::local_array, 0});
    const index_t ld = LocalIndex(l, me).ld() + 5 * me + 1;
    return Layout(l.shape(), l.partitions(), l.ownership(), Storage{StorageKind::local_array, ld});
  };
  const Layout src = layout({61, 47}, {4, 6}, {p, 1}, reversed), dst = layout({55, 50}, {7, 3}, {1, p}, rotated);
  std::string err = run_case(src, dst, Region{{50, 40}, {3, 2}, {1, 9}}, GetParam(), {});
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

// Paper 003: a 3-D volume split evenly over a rank grid, repartitioned onto an
// imposed patch grid (regular with ragged edges, and irregular) with greedy and
// balanced placement; the source is a block distribution or a cyclic one.
TEST_P(Conformance, PaperRepartition) {
  const int p = world_size();
  const Coord grid = p == 4 ? Coord{2, 2, 1} : Coord{p, 1, 1};
  const std::string g = grid.str();
  const std::string blocks = detail::cat("23x19x13 tile=", (23 + grid[0] - 1) / grid[0], "x",
                                         (19 + grid[1] - 1) / grid[1], "x13 block_cyclic grid=", g);
  const std::string cyclic = "23x19x13 tile=4x3x13 block_cyclic grid=" + g;
  for (const std::string& src_spec : {blocks, cyclic})
    for (const char* patches : {"5x4x6", "[0,2,9,23]x[0,19]x[0,1,7,13]"})
      for (const char* rule : {"greedy", "balanced"}) {
        const Layout src = Layout::parse(src_spec);
        const Layout dst = Layout::parse(detail::cat("23x19x13 tile=", patches, " ", rule, " of=(", src_spec, ")"));
        std::string err = run_case(src, dst, Region::whole(src.shape()), GetParam(), {});
        EXPECT_TRUE(all_ok(err.empty())) << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  " << err;
      }
}

// Paper 001's case, where `phased` runs the paper's optimal schedule
// (schedule::paper_rounds; its rounds are checked in test_schedule): 1-D
// block-cyclic r -> K*r and K*r -> r for every K <= P, ragged lengths, and a
// region that keeps indices in place.
TEST_P(Conformance, PaperBlockSizeChange) {
  const int p = world_size();
  for (int K = 2; K <= std::max(p, 2); ++K)
    for (index_t n : {index_t{p} * K * 3 * 4, index_t{p} * K * 3 * 4 + 7})
      for (bool shrink : {false, true}) {
        const auto spec = [&](index_t t) { return detail::cat(n, " tile=", t, " block_cyclic grid=", p); };
        const Layout src = Layout::parse(spec(shrink ? 3 * K : 3)), dst = Layout::parse(spec(shrink ? 3 : 3 * K));
        for (const Region& r : {Region::whole(src.shape()), Region{{n - 9}, {5}, {5}}}) {
          std::string err = run_case(src, dst, r, GetParam(), {});
          EXPECT_TRUE(all_ok(err.empty())) << "\n  src " << src.spec() << "\n  dst " << dst.spec() << "\n  region "
                                           << r.str() << "\n  " << err;
        }
      }
}

// One plan, every strategy in turn, twice: strategies must not disturb each
// other's state (each owns its buffers, datatypes and count arrays).
// Memory budgets below one message (Options::max_buffer_bytes; issue 10): random
// cases with a random budget from two elements up to one message each way, so
// `phased` and `phased_sendrecv` send their messages as pieces (plan/pieces.hpp),
// and `p2p_pipelined` with one from its least (slots of one element) up to its
// slots without a budget, so its pieces shrink to fit,
// with random arithmetic half the time (applied piece by piece); every case
// against the oracle, and the measured buffers (Plan::buffer_bytes, the plan's
// allocation counter) within the budget on every rank.
TEST(ConformanceShared, MemoryBudgetPieces) {
  const int nranks = world_size();
  const CaseRange range = case_range(60, 1010);
  int split = 0;  // runs whose budget is below one message each way
  for (int c = range.first; c < range.end; ++c) {
    Rng rng = case_rng(range.seed, c);
    const bool arith = uniform(rng, 0, 1) == 1;  // f64 elements, target = -1.5 source + 0.5 target
    const auto [src0, dst0, r] = random_case(rng, nranks, 4, arith ? 8 : 0, false, uniform(rng, 0, 3) == 0);
    const Layout src = with_rank_ld(src0, world_rank()), dst = with_rank_ld(dst0, world_rank());
    Options base;
    if (arith) base.arithmetic.type = ElementType::f64, base.arithmetic.alpha = -1.5, base.arithmetic.beta = 0.5;
    // Max over ranks: phased's one message each way; p2p_pipelined's slots
    // without a budget, and with pieces of one element (the least it can hold).
    index_t need[3] = {};
    {
      const RankPlan rp = plan_rank(src, dst, r, world_rank(), nranks);
      Options least = base;
      least.max_buffer_bytes = 1;
      need[0] = extra_memory(rp, "phased", base);
      need[1] = extra_memory(rp, "p2p_pipelined", base);
      need[2] = extra_memory(rp, "p2p_pipelined", least);
      MPI_Allreduce(MPI_IN_PLACE, need, 3, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    }
    const index_t es = src.elem_size();
    for (const char* ex : {"phased", "phased_sendrecv", "p2p_pipelined"}) {
      const bool pipelined = std::string_view(ex) == "p2p_pipelined";
      const index_t lo = pipelined ? std::max(es, need[2]) : 2 * es, hi = pipelined ? need[1] : need[0];
      Options opt = base;
      opt.max_buffer_bytes = uniform(rng, lo, std::max(lo, hi));
      if (uniform(rng, 0, 3) == 0) opt.max_message_bytes = uniform(rng, 1, 64);  // pieces split again
      opt.strategy = ex;
      if (!pipelined) split += opt.max_buffer_bytes < need[0];
      OracleCase oc(src, dst, r, world_rank(), opt.arithmetic);
      Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD, opt);
      std::string err;
      for (int rep = 0; rep < 2; ++rep) {
        plan.execute(oc.src_blocks(), oc.dst_blocks(), ex);
        if (err.empty()) err = oc.check(detail::cat("rep ", rep));
        if (rep == 0) oc.reset_target();
      }
      if (err.empty() && plan.buffer_bytes() > opt.max_buffer_bytes)
        err = detail::cat("allocated ", plan.buffer_bytes(), " bytes, over the budget ", opt.max_buffer_bytes);
      const bool ok = all_ok(err.empty());
      EXPECT_TRUE(err.empty()) << "rank " << world_rank() << " case " << c << " " << ex << " budget "
                               << opt.max_buffer_bytes << " (without a budget: " << hi << ")\n  src "
                               << src.spec() << "\n  dst " << dst.spec() << "\n  region " << r.str() << "\n  " << err
                               << "\n  replay: " << replay_command(range, c);
      if (!ok) return;
    }
  }
  if (world_size() > 1 && range.end - range.first >= 60) {
    EXPECT_GT(split, 30);  // most cases move something between ranks
  }
}

TEST(ConformanceShared, StrategiesAlternateOnOnePlan) {
  const int nranks = world_size();
  Rng rng(31337);
  for (int c = 0; c < 40; ++c) {
    const auto [src, dst, r] = random_case(rng, nranks, 3, 8);
    OracleCase data(src, dst, r, world_rank());
    Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD);
    std::string err;
    for (int round = 0; round < 2; ++round)
      for (const std::string& ex : strategy_names()) {
        data.reset_target();
        plan.execute(data.src_blocks(), data.dst_blocks(), ex);
        if (err.empty()) err = data.check(ex + " round " + std::to_string(round));
      }
    const bool ok = all_ok(err.empty());
    EXPECT_TRUE(err.empty()) << "case " << c << "\n  src " << src.spec() << "\n  dst " << dst.spec()
                             << "\n  region " << r.str() << "\n  " << err;
    if (!ok) return;
  }
}

// The typed form: spans of the storage the harness allocates, elements of the
// layouts' size; a span of another element type or too short is refused on
// every rank before anything moves.
TEST(ConformanceShared, TypedSpans) {
  const int p = world_size(), rank = world_rank();
  const Layout src = block_cyclic_layout({61, 47}, {7, 5}, {p, 1});
  const Layout dst = block_cyclic_layout({61, 47}, {4, 9}, {1, p}, 8, StorageKind::local_array);
  const Region r = Region::whole(src.shape());
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), 101);
  fill_pattern(dst, rank, d.blocks(), 202);
  Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD);
  const std::span<double> a = s.as<double>(), b = d.as<double>();
  plan.execute(std::span<const double>(a), b, "alltoallv");
  const CheckResult k = check_redistributed(dst, rank, d.blocks(), r, src, 101, 202);
  EXPECT_TRUE(all_ok(k.ok())) << k.first_error;
  // 4-byte elements against esize 8: refused, the target untouched.
  fill_pattern(dst, rank, d.blocks(), 202);
  const std::span<float> fa(reinterpret_cast<float*>(a.data()), a.size() * 2);
  const std::span<float> fb(reinterpret_cast<float*>(b.data()), b.size() * 2);
  try {
    plan.execute(std::span<const float>(fa), fb);
    ADD_FAILURE() << "a float span was accepted for 8-byte elements";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elements of 4 bytes"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(all_ok(check_pattern(dst, rank, d.blocks(), 202).ok()));
  // One element short on the last rank that stores any: refused on every rank.
  int last = -1;
  const int mine = b.empty() ? -1 : rank;
  MPI_Allreduce(&mine, &last, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  try {
    plan.execute(std::span<const double>(a), rank == last ? b.first(b.size() - 1) : b);
    ADD_FAILURE() << "a short span was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last)), std::string::npos) << e.what();
  }
  // Vectors (the README's form), sized by LocalIndex: the same move.
  std::vector<double> va(a.begin(), a.end()), vb(static_cast<size_t>(LocalIndex(dst, rank).elements()));
  fill_pattern(dst, rank, d.blocks(), 202);
  std::copy(b.begin(), b.end(), vb.begin());
  plan.execute(va, vb);
  std::copy(vb.begin(), vb.end(), b.begin());
  const CheckResult kv = check_redistributed(dst, rank, d.blocks(), r, src, 101, 202);
  EXPECT_TRUE(all_ok(kv.ok())) << kv.first_error;
}

// The registry is the list: a new strategy is tested by being registered.
INSTANTIATE_TEST_SUITE_P(AllStrategies, Conformance, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
