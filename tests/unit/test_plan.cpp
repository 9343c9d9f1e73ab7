// Planner tests without MPI: every rank of a simulated communicator is planned,
// the plans are checked against each other (a sender packs exactly what its
// receiver unpacks), then "executed" in memory and the result compared with the
// serial oracle (pattern.hpp), element by element.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <span>

#include "kernels/copy.hpp"
#include "../common/random_layout.hpp"
#include "harness/pattern.hpp"
#include "plan/compressed.hpp"

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
// With `parts`, the plan moves those regions (disjoint boxes that make up `region`)
// and the result must be the one of `region`.
void simulate(const Layout& src, const Layout& dst, const Region& region, int nranks,
              const std::string& what, std::span<const Region> parts = {}) {
  const index_t es = src.elem_size();
  std::vector<RankPlan> plans;
  std::vector<RankStore> s, d;
  for (int r = 0; r < nranks; ++r) {
    if (parts.empty()) {
      plans.push_back(plan_rank(src, dst, region, r, nranks));
    } else {
      const LocalIndex sl(src, r), dl(dst, r);
      plans.push_back(plan_rank(src, dst, sl, dl, parts, r, nranks));
    }
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
        if (seg.shape.volume() <= 4096) {
          ASSERT_EQ(seg.run, brute_run(seg.shape, {&seg.at.strides})) << what;
        }
        const index_t vol = seg.shape.volume();
        detail::copy_run(seg.shape, seg.run, es, seg.count, at(s[p], seg.at, es), seg.at.strides, seg.step, m,
                         detail::packed_strides(seg.shape), {vol, vol * seg.count[0]});
        m += seg.elements() * es;
      }
      m = msg.data();
      for (size_t k = 0; k < rp->segments.size(); ++k) {
        const Segment& seg = rp->segments[k];
        ASSERT_EQ(seg.shape, sp.segments[k].shape) << what << ": run " << k << " of " << p << "->" << q;
        ASSERT_EQ(seg.count, sp.segments[k].count) << what << ": run " << k << " of " << p << "->" << q;
        const index_t vol = seg.shape.volume();
        detail::copy_run(seg.shape, seg.run, es, seg.count, m, detail::packed_strides(seg.shape), {vol, vol * seg.count[0]},
                         at(d[q], seg.at, es), seg.at.strides, seg.step);
        m += seg.elements() * es;
      }
      total_bytes += sp.bytes;
    }
    for (const PeerPlan& rp : plans[p].receives) {
      bool found = false;
      for (const PeerPlan& x : plans[rp.peer].sends) found |= x.peer == p;
      ASSERT_TRUE(found) << what << ": rank " << p << " expects data from " << rp.peer << " that never sends";
    }
    for (const LocalCopy& c : plans[p].locals) {
      if (c.shape.volume() <= 4096) {
        ASSERT_EQ(c.run, brute_run(c.shape, {&c.from.strides, &c.to.strides})) << what;
      }
      detail::copy_run(c.shape, c.run, es, c.count, at(s[p], c.from, es), c.from.strides, c.from_step, at(d[p], c.to, es),
                       c.to.strides, c.to_step);
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
    const auto [src, dst, r] = random_case(rng, nranks);
    ASSERT_EQ(src.check(nranks), "") << src.spec();
    ASSERT_EQ(dst.check(nranks), "") << dst.spec();
    simulate(src, dst, r, nranks,
             "case " + std::to_string(c) + " [" + src.spec() + "] -> [" + dst.spec() + "] region " + r.str());
    if (HasFatalFailure()) return;
  }
}

// A region cut into boxes (each dimension at a random point, some boxes empty)
// moves as one plan of those boxes: the same result as the region itself.
TEST(Plan, SeveralRegionsMakeOnePlan) {
  Rng rng(777);
  for (int c = 0; c < 400; ++c) {
    const int nranks = static_cast<int>(uniform(rng, 1, 5));
    const auto [src, dst, r] = random_case(rng, nranks);
    if (r.empty()) continue;
    std::vector<Region> parts{r};
    for (int d = 0; d < r.size.ndim(); ++d) {
      std::vector<Region> next;
      for (const Region& p : parts) {
        const index_t cut = uniform(rng, 0, p.size[d]);
        Region lo = p, hi = p;
        lo.size[d] = cut;
        hi.size[d] = p.size[d] - cut;
        hi.dst_offset[d] += cut;
        hi.src_offset[r.src_dim(d)] += cut;
        next.push_back(hi);  // reversed: the order of regions does not matter
        next.push_back(lo);
      }
      parts = next;
    }
    ASSERT_EQ(check_regions(parts, src.shape(), dst.shape()), "");
    simulate(src, dst, r, nranks, "case " + std::to_string(c) + " in " + std::to_string(parts.size()) + " regions", parts);
    if (HasFatalFailure()) return;
  }
}

TEST(Plan, RegionsMustNotOverlapInTheTarget) {
  const Coord shape{20, 30};
  const std::vector<Region> ok{{{5, 5}, {0, 0}, {0, 0}}, {{5, 5}, {0, 0}, {5, 0}}, {{20, 3}, {0, 0}, {0, 27}}};
  EXPECT_EQ(check_regions(ok, shape, shape), "");  // the same source twice is fine
  std::vector<Region> bad = ok;
  bad.push_back({{2, 2}, {0, 0}, {4, 4}});
  EXPECT_NE(check_regions(bad, shape, shape).find("regions 0 (5x5 from=0x0 to=0x0) and 3"), std::string::npos)
      << check_regions(bad, shape, shape);
  bad = ok;
  bad.push_back({{2, 2}, {0, 0}, {19, 0}});
  EXPECT_NE(check_regions(bad, shape, shape).find("region 3: "), std::string::npos);
}

// The elements a list of runs touches, per peer, as sorted (block, offset) pairs
// of this rank's storage (`from`: the source side of local copies).
using Elements = std::vector<std::pair<index_t, index_t>>;
void add_box(Elements& out, const Coord& shape, const Address& a) {
  const int n = shape.ndim();
  Coord i(n);
  for (index_t k = 0, v = shape.volume(); k < v; ++k) {
    index_t rest = k, off = a.offset;
    for (int d = 0; d < n; ++d) i[d] = rest % shape[d], rest /= shape[d], off += i[d] * a.strides[d];
    out.emplace_back(a.block, off);
  }
}
std::map<int, Elements> elements_of(const std::vector<PeerPlan>& peers) {
  std::map<int, Elements> m;
  for (const PeerPlan& p : peers)
    for (const Segment& run : p.segments)
      for (const Segment& s : expand(run)) add_box(m[p.peer], s.shape, s.at);
  for (auto& [k, v] : m) std::sort(v.begin(), v.end());
  return m;
}
Elements local_elements(const std::vector<LocalCopy>& locals, bool from) {
  Elements e;
  for (const LocalCopy& run : locals)
    for (const LocalCopy& c : expand(run)) add_box(e, c.shape, from ? c.from : c.to);
  std::sort(e.begin(), e.end());
  return e;
}

// The old representation is the oracle of the new one: for every rank, the
// elements each peer's runs touch (runs expanded) are those of the segment
// list, on both sides and in the local copies; then all ranks are simulated
// and checked against the serial oracle, which checks the message order.
// REDIST_PLAN_CASES=N runs N cases (default `cases`), REDIST_PLAN_SEED another
// seed. `permute`: regions that permute dimensions (Region::axes).
void compressed_against_segment_list(int cases, std::uint64_t seed0, bool permute) {
  const char* nc = std::getenv("REDIST_PLAN_CASES");
  const char* seed = std::getenv("REDIST_PLAN_SEED");
  Rng rng(seed ? std::strtoull(seed, nullptr, 10) : seed0);
  index_t runs = 0, segments = 0;
  for (int c = 0, n = nc ? std::atoi(nc) : cases; c < n; ++c) {
    const int nranks = static_cast<int>(uniform(rng, 1, 6));
    const auto [src, dst, r] = random_case(rng, nranks, 4, 0, /*fine=*/true, permute);
    ASSERT_EQ(src.check(nranks), "") << src.spec();
    ASSERT_EQ(dst.check(nranks), "") << dst.spec();
    const std::string what = "case " + std::to_string(c) + " [" + src.spec() + "] -> [" + dst.spec() + "] region " + r.str();
    for (int rank = 0; rank < nranks; ++rank) {
      const LocalIndex sl(src, rank), dl(dst, rank);
      const RankPlan got = plan_rank(src, dst, sl, dl, r, rank, nranks);
      const RankPlan want = detail::plan_segment_list(src, dst, sl, dl, r, rank, nranks);
      ASSERT_EQ(elements_of(got.sends), elements_of(want.sends)) << what << ", rank " << rank << " sends";
      ASSERT_EQ(elements_of(got.receives), elements_of(want.receives)) << what << ", rank " << rank << " receives";
      ASSERT_EQ(local_elements(got.locals, true), local_elements(want.locals, true)) << what << ", rank " << rank;
      ASSERT_EQ(local_elements(got.locals, false), local_elements(want.locals, false)) << what << ", rank " << rank;
      EXPECT_EQ(got.stats.bytes_sent, want.stats.bytes_sent) << what;
      EXPECT_EQ(got.stats.bytes_received, want.stats.bytes_received) << what;
      EXPECT_EQ(got.stats.bytes_local, want.stats.bytes_local) << what;
      EXPECT_EQ(got.stats.messages_sent, want.stats.messages_sent) << what;
      EXPECT_EQ(got.stats.target_tiles, want.stats.target_tiles) << what;
      EXPECT_EQ(got.stats.max_segments_per_tile, want.stats.max_segments_per_tile) << what;
      EXPECT_EQ(got.stats.segments_per_tile_total, want.stats.segments_per_tile_total) << what;
      EXPECT_LE(got.stats.runs_sent, want.stats.runs_sent) << what;
      runs += got.stats.runs_sent + got.stats.local_runs;
      segments += want.stats.runs_sent + want.stats.local_runs;
    }
    simulate(src, dst, r, nranks, what);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("compressed%s: %lld runs where the segment list has %lld entries\n", permute ? " (permuted)" : "",
              static_cast<long long>(runs), static_cast<long long>(segments));
}

TEST(Plan, CompressedPlansExpandToTheSegmentList) { compressed_against_segment_list(3000, 20261123, false); }

// Transposes and other permutations in closed form: a 1x1-tile transpose of
// 2000^2 was 4 million segments per rank and 2.6 s of planning.
TEST(Plan, CompressedPlansOfPermutedRegionsExpandToTheSegmentList) {
  compressed_against_segment_list(2000, 20261130, true);
}

TEST(Plan, PeriodicListsSkipAhead) {
  // Long vectors with both sides fine-grained: the 1-D lists repeat every
  // lcm(cycles) and are skipped ahead once steady. Checked against the segment
  // list element by element; the number of runs does not grow with the length.
  // ks = 2: the source is 2-cyclic in tile_pointers storage (no run crosses a tile there).
  auto layouts = [](index_t n, index_t ts, index_t tt, index_t gs, index_t gt, index_t ks) {
    Layout src(Coord({n}), {DimPartition::regular(n, ts, ts > 1 ? 1 : 0)},
               Ownership::block_cyclic({.grid = {gs}, .source = {0}, .super = {ks}}),
               {ks == 1 ? StorageKind::tile : StorageKind::tile_pointers, 0}, 8);
    Layout dst(Coord({n + 7}), {DimPartition::regular(n + 7, tt)},
               Ownership::block_cyclic({.grid = {gt}, .source = {gt - 1}, .super = {1}}),
               {StorageKind::local_array, 0}, 8);
    return std::pair{src, dst};
  };
  for (index_t ks = 1; ks <= 2; ++ks)
  for (index_t ts = 1; ts <= 4; ++ts)
    for (index_t tt = 1; tt <= 5; ++tt)
      for (index_t gs = 1; gs <= 3; ++gs)
        for (index_t gt = 1; gt <= 3; ++gt) {
          if (ks == 2 && ts > 2) continue;
          const int nranks = static_cast<int>(std::max(gs, gt));
          index_t runs[2] = {0, 0};
          for (int twice = 0; twice < 2; ++twice) {
            const index_t n = twice ? 6001 : 3001;
            const auto [src, dst] = layouts(n, ts, tt, gs, gt, ks);
            const Region r{Coord({n - 5}), Coord({3}), Coord({9})};
            const std::string what = src.spec() + " -> " + dst.spec();
            for (int rank = 0; rank < nranks; ++rank) {
              const LocalIndex sl(src, rank), dl(dst, rank);
              const RankPlan got = plan_rank(src, dst, sl, dl, r, rank, nranks);
              const RankPlan want = detail::plan_segment_list(src, dst, sl, dl, r, rank, nranks);
              ASSERT_EQ(elements_of(got.sends), elements_of(want.sends)) << what << ", rank " << rank;
              ASSERT_EQ(elements_of(got.receives), elements_of(want.receives)) << what << ", rank " << rank;
              ASSERT_EQ(local_elements(got.locals, false), local_elements(want.locals, false)) << what;
              runs[twice] += got.stats.runs_sent + got.stats.runs_received + got.stats.local_runs;
            }
            simulate(src, dst, r, nranks, what);
            if (HasFatalFailure()) return;
          }
          if (ks == 1) {  // tile_pointers: one run per source tile at most, it grows with n
            EXPECT_LE(runs[1], runs[0] + runs[0] / 8 + 4 * nranks) << ts << " " << tt << " " << gs << " " << gt;
          }
        }
}

TEST(Plan, CyclicVectorIsAFewRuns) {
  // Paper 001's r -> K*r with r = 1: a cyclic(1) vector to blocks of 1000 on 4
  // ranks. Every peer's message is one run (count 250 x 25, steps in storage).
  const Layout src = Layout::parse("100000 tile=1 block_cyclic grid=4");
  const Layout dst = Layout::parse("100000 tile=1000 block_cyclic grid=4");
  for (int rank = 0; rank < 4; ++rank) {
    const RankPlan p = plan_rank(src, dst, Region::whole(src.shape()), rank, 4);
    ASSERT_EQ(p.sends.size(), 3u);
    for (const PeerPlan& pp : p.sends) {
      ASSERT_EQ(pp.segments.size(), 1u) << "rank " << rank << " -> " << pp.peer;
      const Segment& s = pp.segments[0];
      EXPECT_EQ(s.count, (std::array<index_t, 2>{250, 25}));
      EXPECT_EQ(s.step, (std::array<index_t, 2>{1, 1000}));  // adjacent in the cyclic source
    }
    for (const PeerPlan& pp : p.receives) {
      ASSERT_EQ(pp.segments.size(), 1u);
      EXPECT_EQ(pp.segments[0].step, (std::array<index_t, 2>{4, 1000}));
    }
    ASSERT_EQ(p.locals.size(), 1u);
    EXPECT_EQ(p.stats.segments_sent, 3 * 250 * 25);
    EXPECT_EQ(p.stats.runs_sent, 3);
  }
}

TEST(Plan, AdjacentPiecesMergeInLocalArrays) {
  // One rank's 4000x4000 local array to another rank's, tiles 100 vs 70x90: the
  // tile boundaries do not cut contiguous storage, so the move is one segment
  // (the segment list has 7,360).
  const Layout src = Layout::parse("4000x4000 tile=100x100 block_cyclic grid=1x1 storage=local_array");
  const Layout dst = Layout::parse("4000x4000 tile=70x90 block_cyclic grid=1x1 first=1 storage=local_array");
  const RankPlan p0 = plan_rank(src, dst, Region::whole(src.shape()), 0, 2);
  ASSERT_EQ(p0.sends.size(), 1u);
  ASSERT_EQ(p0.sends[0].segments.size(), 1u);
  EXPECT_EQ(p0.sends[0].segments[0].shape, Coord({4000, 4000}));
  EXPECT_EQ(p0.sends[0].segments[0].run, 4000 * 4000);
}

// Two plans entry for entry: peers in order, every run's shape, addresses,
// counts and steps, the local copies, the statistics.
void expect_same_plan(const RankPlan& a, const RankPlan& b, const std::string& what) {
  auto same_addr = [](const Address& x, const Address& y) {
    return x.block == y.block && x.offset == y.offset && x.strides == y.strides;
  };
  auto same_peers = [&](const std::vector<PeerPlan>& x, const std::vector<PeerPlan>& y, const char* side) {
    ASSERT_EQ(x.size(), y.size()) << what << " " << side;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i].peer, y[i].peer) << what << " " << side << " " << i;
      ASSERT_EQ(x[i].bytes, y[i].bytes) << what << " " << side << " " << i;
      ASSERT_EQ(x[i].segments.size(), y[i].segments.size()) << what << " " << side << " peer " << x[i].peer;
      for (size_t k = 0; k < x[i].segments.size(); ++k) {
        const Segment &s = x[i].segments[k], &t = y[i].segments[k];
        ASSERT_TRUE(s.shape == t.shape && same_addr(s.at, t.at) && s.run == t.run && s.count == t.count &&
                    s.step == t.step)
            << what << " " << side << " peer " << x[i].peer << " run " << k;
      }
    }
  };
  same_peers(a.sends, b.sends, "sends");
  same_peers(a.receives, b.receives, "receives");
  ASSERT_EQ(a.locals.size(), b.locals.size()) << what;
  for (size_t k = 0; k < a.locals.size(); ++k) {
    const LocalCopy &s = a.locals[k], &t = b.locals[k];
    ASSERT_TRUE(s.shape == t.shape && same_addr(s.from, t.from) && same_addr(s.to, t.to) && s.run == t.run &&
                s.count == t.count && s.from_step == t.from_step && s.to_step == t.to_step)
        << what << " local " << k;
  }
  const PlanStats &x = a.stats, &y = b.stats;
  const index_t xs[] = {x.bytes_sent, x.bytes_received, x.bytes_local, x.segments_sent, x.segments_received,
                        x.local_copies, x.target_tiles, x.max_segments_per_tile, x.segments_per_tile_total};
  const index_t ys[] = {y.bytes_sent, y.bytes_received, y.bytes_local, y.segments_sent, y.segments_received,
                        y.local_copies, y.target_tiles, y.max_segments_per_tile, y.segments_per_tile_total};
  for (size_t i = 0; i < std::size(xs); ++i) EXPECT_EQ(xs[i], ys[i]) << what << " statistic " << i;
}

TEST(Plan, FirstInWindowIsTheLeastSolution) {
  // Against a search: every (a, b, m, h) with m <= 40, then random ones with m up
  // to 2^40 whose answer a search finds within 10^5 steps, or that a search
  // over a whole cycle (m / gcd(a, m) steps) shows has none.
  for (index_t m = 1; m <= 40; ++m)
    for (index_t a = 0; a < m; ++a)
      for (index_t b = 0; b < m; ++b)
        for (index_t h = 0; h < m; ++h) {
          index_t want = -1;
          for (index_t j = 0; j < m && want < 0; ++j)
            if ((a * j + b) % m <= h) want = j;
          ASSERT_EQ(detail::first_in_window(a, b, m, h), want) << a << " " << b << " " << m << " " << h;
        }
  Rng rng(7);
  for (int c = 0; c < 300; ++c) {
    const index_t m = uniform(rng, 1, index_t{1} << uniform(rng, 6, 40));
    const index_t a = uniform(rng, 0, m - 1), b = uniform(rng, 0, m - 1), h = uniform(rng, 0, m / uniform(rng, 1, 1000));
    const index_t got = detail::first_in_window(a, b, m, h);
    const index_t cycle = m / std::gcd(a, m);
    index_t want = -1;
    for (index_t j = 0; j < std::min<index_t>(cycle, 100000) && want < 0; ++j)
      if (static_cast<index_t>((static_cast<__int128>(a) * j + b) % m) <= h) want = j;
    if (want >= 0 || cycle <= 100000) {
      ASSERT_EQ(got, want) << a << " " << b << " " << m << " " << h;
    } else if (got >= 0) {  // beyond the search: a solution, and none before it the search saw
      ASSERT_LE(static_cast<index_t>((static_cast<__int128>(a) * got + b) % m), h) << a << " " << b << " " << m;
      ASSERT_GE(got, 100000);
    }
  }
}

TEST(Plan, PeersFromOwnPiecesGiveTheSamePlan) {
  // The compressed planner builds 1-D lists only for the other side's grid
  // coordinates that share a piece with this rank (peer_coords), and each list
  // jumps over the blocks that meet nothing (first_in_window); before, every
  // coordinate, every block. The plan must be the same entry for entry: 400 random
  // fine-grained cases on up to 48 ranks (grids larger than the data often,
  // 1-4 dimensions, odd extents, first-tile offsets, k-cyclic, every storage),
  // every rank planned both ways. Then one case at 4096 ranks on a few ranks.
  // REDIST_PLAN_CASES=N and REDIST_PLAN_SEED as in CompressedPlansExpandToTheSegmentList.
  const char* nc = std::getenv("REDIST_PLAN_CASES");
  const char* seed = std::getenv("REDIST_PLAN_SEED");
  Rng rng(seed ? std::strtoull(seed, nullptr, 10) : 20261126);
  auto both = [](const Layout& src, const Layout& dst, const Region& r, int rank, int nranks, const std::string& what) {
    const LocalIndex sl(src, rank), dl(dst, rank);
    RankPlan fast, every;
    const bool a = detail::plan_compressed(src, dst, sl, dl, r, rank, nranks, fast, false);
    const bool b = detail::plan_compressed(src, dst, sl, dl, r, rank, nranks, every, true);
    ASSERT_EQ(a, b) << what;
    expect_same_plan(fast, every, what + ", rank " + std::to_string(rank));
  };
  for (int c = 0, cases = nc ? std::atoi(nc) : 400; c < cases; ++c) {
    const int nranks = static_cast<int>(uniform(rng, 1, 48));
    const auto [src, dst, r] = random_case(rng, nranks, 4, 0, /*fine=*/true);
    if (r.empty()) continue;
    const std::string what = "case " + std::to_string(c) + " [" + src.spec() + "] -> [" + dst.spec() + "] region " + r.str();
    for (int rank = 0; rank < nranks; ++rank) {
      both(src, dst, r, rank, nranks, what);
      if (HasFatalFailure()) return;
    }
  }
  // Long vectors (many periods: the periodic shortcut with jumps between its
  // boundaries) on grids of unlike sizes.
  for (int c = 0; c < 30; ++c) {
    const index_t n = uniform(rng, 5000, 30000);
    auto side = [&](index_t extent) {
      const index_t t = uniform(rng, 1, 5), g = uniform(rng, 2, 24);
      return detail::cat(extent, " tile=", t, " offset=", uniform(rng, 0, t - 1), " block_cyclic grid=", g,
                         " src=", uniform(rng, 0, g - 1), " super=", uniform(rng, 1, 2),
                         std::vector<const char*>{"", " storage=local_array", " storage=tile_pointers"}[uniform(rng, 0, 2)]);
    };
    const Layout src = Layout::parse(side(n + uniform(rng, 0, 9))), dst = Layout::parse(side(n + uniform(rng, 0, 9)));
    const Region r{Coord({n - uniform(rng, 0, 20)}), Coord({uniform(rng, 0, 9)}), Coord({uniform(rng, 0, 9)})};
    const int nranks = static_cast<int>(std::max(src.ownership().ranks_needed(), dst.ownership().ranks_needed()));
    for (int rank = 0; rank < nranks; ++rank) {
      both(src, dst, r, rank, nranks, src.spec() + " -> " + dst.spec() + " region " + r.str());
      if (HasFatalFailure()) return;
    }
  }
  const Layout src = Layout::parse("655363 tile=4 offset=3 block_cyclic grid=4096 src=5");
  const Layout dst = Layout::parse("655369 tile=5 block_cyclic grid=4096 super=2 storage=local_array");
  const Region r{Coord({655350}), Coord({7}), Coord({2})};
  for (int rank : {0, 1, 4095}) both(src, dst, r, rank, 4096, src.spec() + " -> " + dst.spec());
  // Too few ranks: the same error as before, naming the first rank outside.
  const Layout six = Layout::parse("60 tile=1 block_cyclic grid=6");
  const LocalIndex sl(six, 0), dl(six, 0);
  RankPlan p;
  try {
    detail::plan_compressed(six, six, sl, dl, Region::whole(six.shape()), 0, 4, p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "source ownership gives tiles to rank 4, outside the communicator of 4 ranks");
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

// Found by fuzzing (fuzz_plan_gen): super-tile factors as large as the cycle
// check allows (tile x super x grid fits 64 bits). LocalIndex computed
// ceil(tiles / super) as (tiles + super - 1) / super, which overflowed (the rank
// then owned no tiles: nothing moved), and the compressed planner's tile counts
// looped once per position in a super-tile (2^62 iterations: a hang).
TEST(Plan, SuperTilesLargerThanTheArray) {
  const struct {
    const char *src, *dst;
    int nranks;
  } cases[] = {
      {"10 tile=1 block_cyclic super=9223372036854775807", "10 tile=3 block_cyclic", 1},
      {"12x268 tile=2x5 block_cyclic first=1 super=4611686018427387903x1", "12x268 tile=5x7 block_cyclic grid=2x1", 2},
      {"9 tile=1 block_cyclic grid=2 src=1 super=2305843009213693951", "9 tile=2 block_cyclic grid=2", 2},
  };
  for (const auto& c : cases) {
    const Layout src = Layout::parse(c.src), dst = Layout::parse(c.dst);
    ASSERT_EQ(src.check(c.nranks), "") << c.src;
    simulate(src, dst, Region::whole(src.shape()), c.nranks, c.src);
    simulate(dst, src, Region::whole(src.shape()), c.nranks, c.src);
    if (HasFatalFailure()) return;
  }
  // 2^63 - 2 tiles in two super-tiles: the owned tile count is exact (planned only).
  const index_t n = std::numeric_limits<index_t>::max() - 1;
  const Layout big = Layout::parse(detail::cat(n, " tile=1 esize=1 block_cyclic super=", (index_t{1} << 62) + 1));
  ASSERT_EQ(big.check(1), "");
  EXPECT_EQ(LocalIndex(big, 0).owned_count(0), n);
  const RankPlan p = plan_rank(big, big, Region{Coord({3}), Coord({n - 3}), Coord({0})}, 0, 1);
  EXPECT_EQ(p.stats.bytes_local, 3);
}

// Found by fuzzing (fuzz_plan_gen), a wrong result: rank 0 of the source keeps
// global rows 0 (its first tile: one row after offset=1), 3-4, 7-8, 11-12 and
// 15-16 in its local array; for target tiles of 4 rows it copies rows 0|3, 4|7,
// 8|11, 12|15, one progression of two pieces per target tile, alike in the local
// index (+1) but not in (tile, offset in it): (+1, +0) from row 0, (+1, -1) from
// row 4. Dimension 1 has more pieces, so dimension 0's progressions were run
// with the step of the first one: 54 of 306 elements landed a row off.
TEST(Plan, ProgressionAfterARaggedFirstTile) {
  const Layout src = Layout::parse("17x18 tile=2x2 offset=1x0 storage=local_array block_cyclic grid=2x2");
  simulate(src, Layout::parse("17x18 tile=4x4"), Region::whole(src.shape()), 4, "17x18 offset=1x0");
  const Layout src2 =
      Layout::parse("21x22 tile=2x2 offset=1x1 storage=local_array block_cyclic grid=2x2 order=col src=1x0");
  const Layout dst2 = Layout::parse("21x22 tile=4x4 block_cyclic grid=1x2 super=1x2147483646");
  simulate(src2, dst2, Region{Coord({20, 21}), Coord({0, 0}), Coord({0, 0})}, 4, "21x22 offset=1x1");
}
