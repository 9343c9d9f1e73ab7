// Sizes past 32 bits: a 1-D array of 2^27 + 4099 sixteen-byte elements (2 GiB +
// 64 KiB), all on rank 0, moved to rank 1 in one piece: one message, one segment
// and one datatype above 2^31 bytes, byte offsets above 2^31. MPI counts are int:
// the strategies must split or use larger datatypes. (Element offsets above 2^31
// are covered without memory by the planner unit test Plan.OffsetsAbove2To31,
// and with memory by LargeElements below.) Memory: about 9 GB on 2 ranks (the
// two tests run one after the other).
#include <gtest/gtest.h>

#include "../common/mpi_util.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

constexpr index_t kN = (index_t{1} << 27) + 4099;
constexpr index_t kEsize = 16;

Layout on_rank(int r, index_t tile) {
  BlockCyclicParams p;
  p.grid = Coord({1});
  p.first_rank = r;
  return Layout(Coord({kN}), {DimPartition::regular(kN, tile)}, Ownership::block_cyclic(p), {}, kEsize);
}

class Large : public ::testing::TestWithParam<std::string> {};

TEST_P(Large, MessageAbove2GiB) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int rank = world_rank();
  // Source: one tile on rank 0; target: one tile on rank 1; a region at small offsets.
  const Layout src = on_rank(0, kN), dst = on_rank(1, kN);
  const Region region{Coord({kN - 10}), Coord({7}), Coord({3})};
  std::string err;
  {
    harness::LocalStorage s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.blocks(), 5);
    fill_pattern(dst, rank, d.blocks(), 6);
    Plan plan = make_plan(src, dst, region, MPI_COMM_WORLD);
    if (rank == 0) {
      EXPECT_GT(plan.stats().bytes_sent, index_t{1} << 31);
    }
    plan.execute(s.const_blocks(), d.blocks(), GetParam());
    CheckResult c = check_redistributed(dst, rank, d.blocks(), region, src, 5, 6);
    if (!c.ok()) err = c.first_error;
  }
  EXPECT_TRUE(all_ok(err.empty())) << err;
}

// More than 2^31 elements: 2^31 + 4099 one-byte elements, all on rank 0 in a
// local array, moved to rank 1 in tile storage with tiles of 2^30 + 7 elements
// (two whole tiles and a ragged one): element counts, element offsets in storage
// and the message all above 2^31. One strategy per way of moving data (packing
// kernels, MPI datatypes, process_vm_readv): the byte sizes past 2^31 of every
// strategy are MessageAbove2GiB's, and each run here costs about 4 s (most of it
// the pattern fill and check of 2^31 elements). About 4.2 GB per rank.
TEST(LargeElements, CountsAndOffsetsAbove2To31) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  constexpr index_t n = (index_t{1} << 31) + 4099, tile = (index_t{1} << 30) + 7;
  const int rank = world_rank();
  auto layout = [&](int owner, index_t t, StorageKind kind) {
    BlockCyclicParams p;
    p.grid = Coord({1});
    p.first_rank = owner;
    return Layout(Coord({n}), {DimPartition::regular(n, t)}, Ownership::block_cyclic(p), Storage{kind, 0}, 1);
  };
  const Layout src = layout(0, n, StorageKind::local_array), dst = layout(1, tile, StorageKind::tile);
  const Region region{Coord({n - 5}), Coord({2}), Coord({3})};
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), 8);
  Plan plan = make_plan(src, dst, region, MPI_COMM_WORLD);
  if (rank == 1) {
    EXPECT_GT(plan.stats().bytes_received, index_t{1} << 31);
    EXPECT_EQ(plan.stats().bytes_received, n - 5);
  }
  for (const std::string ex : {"p2p", "alltoallw", "direct"}) {
    fill_pattern(dst, rank, d.blocks(), 9);
    plan.execute(s.const_blocks(), d.blocks(), ex);
    const CheckResult c = check_redistributed(dst, rank, d.blocks(), region, src, 8, 9);
    EXPECT_TRUE(all_ok(c.ok())) << ex << ": " << c.wrong << " of " << c.checked << " wrong; first: " << c.first_error;
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, Large, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
