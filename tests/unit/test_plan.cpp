// Planner tests without MPI: every rank of a simulated communicator is planned,
// the plans are checked against each other (a sender packs exactly what its
// receiver unpacks), then "executed" in memory and the result compared with the
// serial oracle (pattern.hpp), element by element.
#include <gtest/gtest.h>

#include <map>

#include "kernels/copy.hpp"
#include "../common/random_layout.hpp"
#include "harness/pattern.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

struct RankStore {
  std::vector<std::vector<std::byte>> blocks;
  std::vector<void*> ptr;
};

RankStore allocate(const Layout& l, int rank) {
  const LocalIndex li(l, rank);
  RankStore s;
  for (index_t b = 0; b < li.nblocks(); ++b) s.blocks.emplace_back(li.block_elements(b) * l.elem_size());
  for (auto& b : s.blocks) s.ptr.push_back(b.data());
  return s;
}

std::byte* at(RankStore& s, const Address& a, index_t es) { return s.blocks[a.block].data() + a.offset * es; }

// Independent of contiguous_run: the longest prefix product of `shape` whose
// elements (column-major) sit at consecutive offsets in every storage given.
index_t brute_run(const Coord& shape, std::initializer_list<const Coord*> strides) {
  const int n = shape.ndim();
  index_t best = 1, prefix = 1;
  for (int k = 0; k < n; ++k) {
    prefix *= shape[k];
    Coord idx(n);
    bool ok = true;
    for (index_t j = 0; j < prefix && ok; ++j) {
      index_t rest = j;
      for (int d = 0; d < n; ++d) idx[d] = rest % shape[d], rest /= shape[d];
      for (const Coord* st : strides) {
        index_t off = 0;
        for (int d = 0; d < n; ++d) off += idx[d] * (*st)[d];
        ok = ok && off == j;
      }
    }
    if (!ok) break;
    best = prefix;
  }
  return best;
}

// Plans all ranks, checks plan consistency, executes serially, checks the result.
void simulate(const Layout& src, const Layout& dst, const Region& region, int nranks,
              const std::string& what) {
  const index_t es = src.elem_size();
  std::vector<RankPlan> plans;
  std::vector<RankStore> s, d;
  for (int r = 0; r < nranks; ++r) {
    plans.push_back(plan_rank(src, dst, region, r, nranks));
    s.push_back(allocate(src, r));
    d.push_back(allocate(dst, r));
    fill_pattern(src, r, s[r].ptr, 11);
    fill_pattern(dst, r, d[r].ptr, 22);
  }
  // Messages: sender packs, receiver unpacks; shapes must agree in order.
  index_t total_bytes = 0;
  for (int p = 0; p < nranks; ++p) {
    for (const PeerPlan& sp : plans[p].sends) {
      const int q = sp.peer;
      ASSERT_NE(q, p) << what;
      const PeerPlan* rp = nullptr;
      for (const PeerPlan& x : plans[q].receives)
        if (x.peer == p) rp = &x;
      ASSERT_NE(rp, nullptr) << what << ": rank " << q << " does not expect rank " << p;
      ASSERT_EQ(sp.bytes, rp->bytes) << what;
      ASSERT_EQ(sp.segments.size(), rp->segments.size()) << what;
      std::vector<std::byte> msg(static_cast<size_t>(sp.bytes));
      std::byte* m = msg.data();
      for (const Segment& seg : sp.segments) {
        if (seg.shape.volume() <= 4096) ASSERT_EQ(seg.run, brute_run(seg.shape, {&seg.at.strides})) << what;
        detail::copy_box(seg.shape, seg.run, es, at(s[p], seg.at, es), seg.at.strides, m, detail::packed_strides(seg.shape));
        m += seg.shape.volume() * es;
      }
      m = msg.data();
      for (size_t k = 0; k < rp->segments.size(); ++k) {
        const Segment& seg = rp->segments[k];
        ASSERT_EQ(seg.shape, sp.segments[k].shape) << what << ": segment " << k << " of " << p << "->" << q;
        detail::copy_box(seg.shape, seg.run, es, m, detail::packed_strides(seg.shape), at(d[q], seg.at, es), seg.at.strides);
        m += seg.shape.volume() * es;
      }
      total_bytes += sp.bytes;
    }
    for (const PeerPlan& rp : plans[p].receives) {
      bool found = false;
      for (const PeerPlan& x : plans[rp.peer].sends) found |= x.peer == p;
      ASSERT_TRUE(found) << what << ": rank " << p << " expects data from " << rp.peer << " that never sends";
    }
    for (const LocalCopy& c : plans[p].locals) {
      if (c.shape.volume() <= 4096) ASSERT_EQ(c.run, brute_run(c.shape, {&c.from.strides, &c.to.strides})) << what;
      detail::copy_box(c.shape, c.run, es, at(s[p], c.from, es), c.from.strides, at(d[p], c.to, es), c.to.strides);
    }
  }
  // Volume: remote + local bytes = region bytes.
  index_t local = 0, recv = 0;
  for (const RankPlan& rp : plans) local += rp.stats.bytes_local, recv += rp.stats.bytes_received;
  EXPECT_EQ(recv, total_bytes) << what;
  EXPECT_EQ(local + recv, region.empty() ? 0 : region.size.volume() * es) << what;
  for (int r = 0; r < nranks; ++r) {
    CheckResult c = check_redistributed(dst, r, d[r].ptr, region, src, 11, 22);
    ASSERT_TRUE(c.ok()) << what << ": " << c.wrong << " wrong of " << c.checked << "; " << c.first_error;
    CheckResult cs = check_pattern(src, r, s[r].ptr, 11);
    ASSERT_TRUE(cs.ok()) << what << ": source changed: " << cs.first_error;
  }
}

}  // namespace

TEST(Plan, NineSegmentsPaperFigure) {
  // 250x250 target tiles over 100x100 source tiles, region at an offset: an
  // interior target tile is cut into 3x3 = 9 SEGMENTS (paper 000 Fig. 2).
  // Rank 1 owns target tile column 1 (grid 1x4), an interior one.
  Layout src = block_cyclic_layout({1000, 1000}, {100, 100}, {2, 2});
  Layout dst = block_cyclic_layout({1000, 1000}, {250, 250}, {1, 4});
  Region r{{800, 800}, {50, 50}, {100, 100}};
  RankPlan p = plan_rank(src, dst, r, 1, 4);
  EXPECT_EQ(p.stats.max_segments_per_tile, 9);
  simulate(src, dst, r, 4, "nine segments");
}

TEST(Plan, EmptyRegionIsNoop) {
  Layout src = block_cyclic_layout({10, 10}, {3, 3}, {1, 2});
  Region r{{0, 5}, {0, 0}, {0, 0}};
  RankPlan p = plan_rank(src, src, r, 1, 2);
  EXPECT_TRUE(p.sends.empty());
  EXPECT_TRUE(p.receives.empty());
  EXPECT_TRUE(p.locals.empty());
}

TEST(Plan, RanksOwningNothing) {
  // Source on ranks 0-1 only, target on rank 3 only; ranks 2 owns nothing anywhere.
  Layout src = block_cyclic_layout({37, 23}, {5, 4}, {2, 1});
  BlockCyclicParams bp;
  bp.grid = {1, 1};
  bp.first_rank = 3;
  Layout dst({37, 23}, {DimPartition::regular(37, 7), DimPartition::regular(23, 6)}, Ownership::block_cyclic(bp));
  simulate(src, dst, Region::whole(src.shape()), 4, "ranks owning nothing");
  RankPlan p2 = plan_rank(src, dst, Region::whole(src.shape()), 2, 4);
  EXPECT_EQ(p2.stats.bytes_sent + p2.stats.bytes_received + p2.stats.bytes_local, 0);
}

TEST(Plan, LocalArrayMatchesScalapackOffsets) {
  // ScaLAPACK 2x2 grid, 10x10 matrix, 3x3 blocks, rank 3 = grid (1,1) holds rows
  // {3,4,5,9} and columns {3,4,5,9}: local (0,0) is global (3,3).
  Layout l = block_cyclic_layout({10, 10}, {3, 3}, {2, 2}, 8, StorageKind::local_array);
  LocalIndex li(l, 3);
  EXPECT_EQ(li.local_extent(), Coord({4, 4}));
  Address a = li.address({1, 1}, {3, 3});
  EXPECT_EQ(a.offset, 0);
  Address b = li.address({3, 3}, {9, 9});
  EXPECT_EQ(b.offset, 3 + 3 * 4);
  EXPECT_EQ(b.strides, Coord({1, 4}));
}

TEST(Plan, RandomLayoutsAllKinds) {
  Rng rng(12345);
  for (int c = 0; c < 1500; ++c) {
    const int nranks = static_cast<int>(uniform(rng, 1, 5));
    const int ndim = static_cast<int>(uniform(rng, 1, 4));
    const index_t max_extent = ndim == 1 ? 200 : ndim == 2 ? 40 : ndim == 3 ? 12 : 7;
    const index_t es = std::vector<index_t>{1, 2, 4, 8, 16, 3, 12}[uniform(rng, 0, 6)];
    Coord a = random_shape(rng, ndim, max_extent), b = random_shape(rng, ndim, max_extent);
    Layout src = random_layout(rng, a, nranks, es), dst = random_layout(rng, b, nranks, es);
    ASSERT_EQ(src.check(nranks), "") << src.spec();
    ASSERT_EQ(dst.check(nranks), "") << dst.spec();
    Region r = random_region(rng, a, b);
    simulate(src, dst, r, nranks,
             "case " + std::to_string(c) + " [" + src.spec() + "] -> [" + dst.spec() + "] region " + r.str());
    if (HasFatalFailure()) return;
  }
}

TEST(Plan, ManySimulatedRanksIsCheap) {
  // 16384 ranks (128x128 grid), each plans only its own tiles.
  Layout src = block_cyclic_layout({1 << 20, 1 << 20}, {1024, 1024}, {128, 128});
  Layout dst = block_cyclic_layout({1 << 20, 1 << 20}, {768, 768}, {64, 256});
  for (int r : {0, 777, 16383}) {
    RankPlan p = plan_rank(src, dst, Region::whole(src.shape()), r, 16384);
    EXPECT_EQ(p.stats.bytes_sent + p.stats.bytes_local, (index_t{1} << 40) / 16384 * 8);
  }
}

TEST(Layout, ReadmePicture) {
  // The example drawn in README.md ("Concepts").
  Layout l = Layout::parse("10x10 tile=4x3 block_cyclic grid=2x2");
  const int want[3][4] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}};
  ASSERT_EQ(l.ntiles(), Coord({3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(l.owner({i, j}), want[i][j]) << i << "," << j;
  LocalIndex li(l, 0);
  ASSERT_EQ(li.ntiles(), 4);
  EXPECT_EQ(li.tile(0), Coord({0, 0}));
  EXPECT_EQ(li.tile(1), Coord({2, 0}));
  EXPECT_EQ(li.tile(2), Coord({0, 2}));
  EXPECT_EQ(li.tile(3), Coord({2, 2}));
  // tile storage: 4x3, 2x3, 4x3, 2x3 elements one after another
  EXPECT_EQ(li.address({2, 0}, {8, 0}).offset, 12);
  EXPECT_EQ(li.address({0, 2}, {0, 6}).offset, 18);
  EXPECT_EQ(li.address({2, 2}, {9, 8}).offset, 30 + 1 + 2 * 2);
  const Layout sl = Layout::parse("10x10 tile=4x3 block_cyclic grid=2x2 storage=local_array");
  LocalIndex la(sl, 0);
  EXPECT_EQ(la.local_extent(), Coord({6, 6}));
}

TEST(Plan, OffsetsAbove2To31) {
  // 2^33 + 5 one-byte elements, source tiles of 2^32, target tiles of 1000003
  // (only planned, never allocated):
  // storage offsets and message sizes above 2^31 elements must be exact in 64 bits.
  const index_t n = (index_t{1} << 33) + 5, t = index_t{1} << 32;
  Layout src(Coord({n}), {DimPartition::regular(n, t)}, Ownership::block_cyclic({.grid = {2}, .source = {}, .super = {}}),
             {}, 1);
  Layout dst(Coord({n}), {DimPartition::regular(n, 1000003)}, Ownership::block_cyclic({.grid = {2}, .source = {}, .super = {}}),
             {}, 1);
  const Region r{Coord({7}), Coord({t + (index_t{1} << 31) + 1}), Coord({(index_t{1} << 32) + 11})};
  // Source elements [t + 2^31 + 1, +7) lie in source tile 1 (rank 1) at offset 2^31 + 1.
  RankPlan p1 = plan_rank(src, dst, r, 1, 2);
  index_t seen = 0;
  for (const LocalCopy& c : p1.locals) seen += c.shape[0];
  for (const PeerPlan& pp : p1.sends)
    for (const Segment& s : pp.segments) {
      EXPECT_GE(s.at.offset, (index_t{1} << 31) + 1);
      EXPECT_LT(s.at.offset, (index_t{1} << 31) + 8);
      seen += s.shape[0];
    }
  EXPECT_EQ(seen, 7);
  // Target element g = 2^32 + 11 is in target tile g / T (T = 1000003), owned by rank
  // tile % 2 and stored after that rank's earlier full tiles: offset T * (tile / 2) + g % T.
  const index_t T = 1000003, g = (index_t{1} << 32) + 11, tile = g / T;
  RankPlan pt = plan_rank(src, dst, r, static_cast<int>(tile % 2), 2);
  bool found = false;
  auto check = [&](const Address& a, const Coord& shape) {
    if (a.offset == T * (tile / 2) + g % T) {
      found = true;
      EXPECT_GE(shape[0], 1);
    }
  };
  for (const LocalCopy& c : pt.locals) check(c.to, c.shape);
  for (const PeerPlan& pp : pt.receives)
    for (const Segment& s : pp.segments) check(s.at, s.shape);
  EXPECT_TRUE(found);
}
