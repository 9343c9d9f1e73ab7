// Sizes past 32 bits: a 1-D array of 2^27 + 4099 sixteen-byte elements (2 GiB +
// 64 KiB), all on rank 0, moved to rank 1 in one piece: one message, one segment
// and one datatype above 2^31 bytes, byte offsets above 2^31. MPI counts are int:
// the strategies must split or use larger datatypes. (Element offsets above 2^31
// are covered without memory by the planner unit test Plan.OffsetsAbove2To31.)
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

INSTANTIATE_TEST_SUITE_P(AllStrategies, Large, ::testing::ValuesIn(strategy_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
