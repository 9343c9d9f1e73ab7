// Placement ownerships (paper 003: greedy and balanced patch placement), no MPI.
// The oracle is independent of src/layout/placement.cpp: each element's source
// rank is looked up one by one (Layout::owner of the source tile holding it),
// giving every patch's parts; optimality is checked by enumerating every
// assignment of small cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "redist/layout.hpp"
#include "redist/plan.hpp"

using namespace redist;

namespace {

using Rng = std::mt19937_64;

index_t uniform(Rng& rng, index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(rng); }

// parts[patch][rank] = elements of the patch held by the rank in the source layout.
std::vector<std::map<int, index_t>> oracle_parts(const Layout& src, const Layout& patches) {
  const int n = src.ndim();
  std::vector<std::map<int, index_t>> parts(static_cast<size_t>(patches.ntiles().volume()));
  const index_t total = src.shape().volume();
  Coord g(n, 0), st(n), pt(n);
  for (index_t e = 0; e < total; ++e) {
    for (int d = 0; d < n; ++d) {
      st[d] = src.partition(d).tile_of(g[d]);
      pt[d] = patches.partition(d).tile_of(g[d]);
    }
    ++parts[linear_index(pt, patches.ntiles())][src.owner(st)];
    for (int d = 0; d < n && ++g[d] == src.shape()[d]; ++d) g[d] = 0;
  }
  return parts;
}

std::vector<int> owners_of(const Layout& l) {
  std::vector<int> o;
  const Coord nt = l.ntiles();
  Coord t(nt.ndim(), 0);
  for (index_t i = 0; i < nt.volume(); ++i) {
    o.push_back(l.owner(t));
    for (int d = 0; d < nt.ndim() && ++t[d] == nt[d]; ++d) t[d] = 0;
  }
  return o;
}

index_t kept(const std::vector<std::map<int, index_t>>& parts, const std::vector<int>& owner) {
  index_t k = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    auto it = parts[p].find(owner[p]);
    if (it != parts[p].end()) k += it->second;
  }
  return k;
}

// Most elements any assignment keeps with every rank's patch count in {f, f+1}:
// all R^n assignments.
index_t brute_force_balanced(const std::vector<std::map<int, index_t>>& parts, int R) {
  const size_t n = parts.size();
  const index_t f = static_cast<index_t>(n) / R;
  std::vector<int> a(n, 0);
  index_t best = -1;
  while (true) {
    std::vector<index_t> load(R, 0);
    for (int r : a) ++load[r];
    if (std::all_of(load.begin(), load.end(), [f](index_t x) { return x == f || x == f + 1; }))
      best = std::max(best, kept(parts, a));
    size_t i = 0;
    for (; i < n && ++a[i] == R; ++i) a[i] = 0;
    if (i == n) return best;
  }
}

// The same optimum for cases too large to enumerate: a textbook min-cost flow
// on the explicit patch x rank network (source -> patch -> any rank -> sink,
// every rank f slots plus one of the n mod R "f+1" slots), successive shortest
// paths found by Bellman-Ford, one patch at a time. Independent of the
// placement code's class-collapsed rank graph.
index_t min_cost_flow_balanced(const std::vector<std::map<int, index_t>>& parts, int R) {
  const int n = static_cast<int>(parts.size());
  const int S = 0, X = 1 + n + R, T = X + 1, N = T + 1;
  struct Arc {
    int to;
    index_t cap, cost;
  };
  std::vector<Arc> arcs;
  std::vector<std::vector<int>> out(N);
  auto arc = [&](int u, int v, index_t cap, index_t cost) {
    out[u].push_back(static_cast<int>(arcs.size()));
    arcs.push_back({v, cap, cost});
    out[v].push_back(static_cast<int>(arcs.size()));
    arcs.push_back({u, 0, -cost});
  };
  index_t total = 0;
  for (int p = 0; p < n; ++p) {
    index_t vol = 0;
    for (auto [r, v] : parts[p]) vol += v;
    total += vol;
    arc(S, 1 + p, 1, 0);
    for (int r = 0; r < R; ++r) {
      auto it = parts[p].find(r);
      arc(1 + p, 1 + n + r, 1, vol - (it == parts[p].end() ? 0 : it->second));
    }
  }
  for (int r = 0; r < R; ++r) {
    arc(1 + n + r, T, n / R, 0);
    arc(1 + n + r, X, 1, 0);
  }
  arc(X, T, n % R, 0);
  index_t cost = 0;
  for (int unit = 0; unit < n; ++unit) {
    std::vector<index_t> dist(N, std::numeric_limits<index_t>::max());
    std::vector<int> via(N, -1);
    dist[S] = 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (int u = 0; u < N; ++u)
        if (dist[u] != std::numeric_limits<index_t>::max())
          for (int a : out[u])
            if (arcs[a].cap > 0 && dist[u] + arcs[a].cost < dist[arcs[a].to])
              dist[arcs[a].to] = dist[u] + arcs[a].cost, via[arcs[a].to] = a, changed = true;
    }
    if (via[T] < 0) return -1;
    for (int v = T; v != S; v = arcs[via[v] ^ 1].to) --arcs[via[v]].cap, ++arcs[via[v] ^ 1].cap;
    cost += dist[T];
  }
  return total - cost;
}

DimPartition random_partition(Rng& rng, index_t extent) {
  if (uniform(rng, 0, 2)) return DimPartition::regular(extent, uniform(rng, 1, std::max<index_t>(1, extent)));
  std::vector<index_t> b{0};
  while (b.back() < extent) b.push_back(std::min(extent, b.back() + uniform(rng, 1, 1 + extent / 2)));
  return DimPartition::irregular(b);
}

// A small source layout: block_cyclic (maybe cyclic, k-cyclic, col order) or
// random owners, regular or irregular tiles.
Layout random_source(Rng& rng, const Coord& shape, int R) {
  const int n = shape.ndim();
  std::vector<DimPartition> parts;
  for (int d = 0; d < n; ++d) parts.push_back(random_partition(rng, shape[d]));
  if (uniform(rng, 0, 3) == 0) return Layout(shape, parts, Ownership::random({rng(), R, 0}));
  BlockCyclicParams p;
  p.grid = Coord(n, 1);
  for (int r = R, d = 0; r > 1; d = (d + 1) % n)  // R = product of the grid
    if (r % 2 == 0) p.grid[d] *= 2, r /= 2;
    else p.grid[d] *= r, r = 1;
  p.order = uniform(rng, 0, 1) ? GridOrder::row : GridOrder::col;
  if (uniform(rng, 0, 2) == 0) p.super = Coord(n, 2);
  return Layout(shape, parts, Ownership::block_cyclic(p));
}

Layout placement(PlacementRule rule, const Layout& src, std::vector<DimPartition> patches) {
  return Layout(src.shape(), std::move(patches), Ownership::placement(rule, src));
}

}  // namespace

// Paper 003, Fig. 1: four ranks in 2x2 blocks, a 3x3 patch grid. The corner
// patches are fully contained and stay; the middle one is shared four ways.
TEST(Placement, PaperFigureOne) {
  const Layout src = Layout::parse("12x12 tile=6x6 block_cyclic grid=2x2");
  const Layout g = Layout::parse("12x12 tile=[0,5,7,12]x[0,5,7,12] greedy of=(12x12 tile=6x6 block_cyclic grid=2x2)");
  ASSERT_EQ(g.check(4), "");
  const std::vector<int> o = owners_of(g);
  EXPECT_EQ(o[0], src.owner({0, 0}));
  EXPECT_EQ(o[2], src.owner({1, 0}));
  EXPECT_EQ(o[6], src.owner({0, 1}));
  EXPECT_EQ(o[8], src.owner({1, 1}));
  EXPECT_EQ(o[4], 0);  // a four-way tie: the lowest rank
  const PlacementSummary s = placement_summary(g);
  EXPECT_EQ(s.patches, 9);
  EXPECT_EQ(s.shared_patches, 5);
  EXPECT_EQ(s.total_elements, 144);
  const Layout b = Layout::parse("12x12 tile=[0,5,7,12]x[0,5,7,12] balanced of=(12x12 tile=6x6 block_cyclic grid=2x2)");
  const PlacementSummary sb = placement_summary(b);
  EXPECT_EQ(*std::max_element(sb.load.begin(), sb.load.end()), 3);
  EXPECT_EQ(*std::min_element(sb.load.begin(), sb.load.end()), 2);
  EXPECT_GE(sb.moved_elements, s.moved_elements);
}

// Greedy: the largest part, ties to the lowest rank; so no assignment moves less.
// Balanced: loads f or f+1, and no balanced assignment keeps more (brute force).
TEST(Placement, OptimalAgainstBruteForce) {
  Rng rng(3003);
  int ties = 0, balanced_moves_more = 0, brute = 0;
  for (int iter = 0; iter < 300; ++iter) {
    const int n = static_cast<int>(uniform(rng, 1, 3));
    const int R = static_cast<int>(uniform(rng, 1, 4));
    Coord shape(n);
    for (int d = 0; d < n; ++d) shape[d] = uniform(rng, 1, n == 1 ? 40 : n == 2 ? 14 : 7);
    const Layout src = random_source(rng, shape, R);
    std::vector<DimPartition> patches;
    for (int d = 0; d < n; ++d) patches.push_back(random_partition(rng, shape[d]));
    const Layout g = placement(PlacementRule::greedy, src, patches);
    const Layout b = placement(PlacementRule::balanced, src, patches);
    SCOPED_TRACE(b.spec());
    ASSERT_EQ(g.check(R), "");
    ASSERT_EQ(Layout::parse(b.spec()), b);
    const auto parts = oracle_parts(src, g);
    const std::vector<int> og = owners_of(g), ob = owners_of(b);
    index_t best_kept = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      int want = 0;
      index_t most = -1;
      for (auto [r, v] : parts[p])  // ascending rank: the first maximum is the lowest rank
        if (v > most) most = v, want = r;
      int nmax = 0;
      for (auto [r, v] : parts[p]) nmax += v == most;
      ties += nmax > 1;
      EXPECT_EQ(og[p], want) << "patch " << p;
      best_kept += most;
    }
    const index_t total = shape.volume();
    EXPECT_EQ(kept(parts, og), best_kept);
    const PlacementSummary sg = placement_summary(g), sb = placement_summary(b);
    EXPECT_EQ(sg.moved_elements, total - best_kept);
    EXPECT_EQ(sb.moved_elements, total - kept(parts, ob));
    EXPECT_LE(sg.moved_elements, sb.moved_elements);  // greedy moves the least
    balanced_moves_more += sb.moved_elements > sg.moved_elements;

    const index_t np = static_cast<index_t>(parts.size());
    std::vector<index_t> load(R, 0);
    for (int r : ob) {
      ASSERT_TRUE(r >= 0 && r < R) << r;
      ++load[r];
    }
    EXPECT_EQ(load, sb.load);
    EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()), 1);
    EXPECT_EQ(*std::min_element(load.begin(), load.end()), np / R);
    index_t states = 1;
    for (index_t i = 0; i < np && states <= 70000; ++i) states *= R;
    if (states <= 70000) {
      const index_t best = brute_force_balanced(parts, R);
      EXPECT_EQ(kept(parts, ob), best) << np << " patches";
      EXPECT_EQ(min_cost_flow_balanced(parts, R), best) << np << " patches";  // the oracle below, checked
      ++brute;
    }
  }
  EXPECT_GT(brute, 150);              // most cases were brute-forced
  EXPECT_GT(ties, 10);                 // the tie rule was exercised
  EXPECT_GT(balanced_moves_more, 30);  // and balancing did cost something
}

// Beyond brute force: 5-9 ranks, up to a few hundred patches, many patches per
// class (regular blocks) and few (irregular, random owners); the kept volume
// equals the independent min-cost flow's.
TEST(Placement, OptimalAgainstMinCostFlow) {
  auto check = [](const Layout& src, const std::vector<DimPartition>& patches) {
    const Layout b = placement(PlacementRule::balanced, src, patches);
    SCOPED_TRACE(b.spec());
    const int R = src.ownership().ranks_needed();
    const auto parts = oracle_parts(src, b);
    const std::vector<int> ob = owners_of(b);
    std::vector<index_t> load(R, 0);
    for (int r : ob) ++load[r];
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, 1);
    EXPECT_EQ(kept(parts, ob), min_cost_flow_balanced(parts, R));
  };
  Rng rng(1203);
  int cases = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const int n = static_cast<int>(uniform(rng, 1, 3));
    const int R = static_cast<int>(uniform(rng, 5, 9));
    Coord shape(n);
    for (int d = 0; d < n; ++d) shape[d] = uniform(rng, 4, n == 1 ? 300 : n == 2 ? 40 : 14);
    const Layout src = random_source(rng, shape, R);
    std::vector<DimPartition> patches;
    for (int d = 0; d < n; ++d)
      patches.push_back(iter % 2 ? random_partition(rng, shape[d])
                                 : DimPartition::regular(shape[d], uniform(rng, 1, 1 + shape[d] / 4)));
    index_t np = 1;
    for (const DimPartition& p : patches) np *= p.ntiles();
    if (np > 300) continue;
    check(src, patches);
    ++cases;
  }
  EXPECT_GT(cases, 30);
  // Regular blocks: many patches per class, on 27 and 12 ranks.
  for (auto [s, p] : {std::pair{"26x25x24 tile=9x9x8 block_cyclic grid=3x3x3", 5},
                      std::pair{"70x45 tile=18x15 block_cyclic grid=4x3", 4}}) {
    const Layout src = Layout::parse(s);
    std::vector<DimPartition> patches;
    for (int d = 0; d < src.ndim(); ++d) patches.push_back(DimPartition::regular(src.shape()[d], p));
    check(src, patches);
  }
}

// Larger cases (no brute force): balanced stays within one patch, never moves
// less than greedy, and greedy keeps fully contained patches in place.
TEST(Placement, LargerCasesBalanceWithinOnePatch) {
  for (const char* s : {"60x50x40 tile=30x25x20 block_cyclic grid=2x2x2",
                        "97x61x33 tile=33x31x17 block_cyclic grid=3x2x2",
                        "64x64x64 tile=16x64x64 block_cyclic grid=4x1x1",
                        "50x50x50 tile=10x10x10 random seed=5 ranks=3"}) {
    const Layout src = Layout::parse(s);
    for (index_t p : {7, 8, 13}) {
      std::vector<DimPartition> patches;
      for (int d = 0; d < 3; ++d) patches.push_back(DimPartition::regular(src.shape()[d], p));
      const Layout g = placement(PlacementRule::greedy, src, patches);
      const Layout b = placement(PlacementRule::balanced, src, patches);
      SCOPED_TRACE(b.spec());
      const PlacementSummary sg = placement_summary(g), sb = placement_summary(b);
      const auto [lo, hi] = std::minmax_element(sb.load.begin(), sb.load.end());
      EXPECT_LE(*hi - *lo, 1);
      EXPECT_LE(sg.moved_elements, sb.moved_elements);
      const auto parts = oracle_parts(src, g);
      const std::vector<int> og = owners_of(g);
      for (size_t i = 0; i < parts.size(); ++i)
        if (parts[i].size() == 1) {
          EXPECT_EQ(og[i], parts[i].begin()->first);
        }
      EXPECT_EQ(sb.moved_elements, src.shape().volume() - kept(parts, owners_of(b)));
    }
  }
}

// Source grids far larger than the ranks holding data (make fuzz found one of
// 300,000 ranks over 8 rows taking seconds): the ranks holding no part are one
// node of the flow until given a patch, so the work follows the holders and the
// patches, not the grid. Balanced against the oracle on the same parts with the
// holders renumbered 0..h-1 and R' = h + n ranks: with n patches on R >= n
// ranks each rank gets at most one, whatever R, so the optimum is the same.
// Then free ranks that must take patches (n >= R: each gets f or f+1).
TEST(Placement, ManyRanksFewHolders) {
  for (const char* s : {"8x8 tile=1x4 block_cyclic grid=300000x1", "8x8 tile=1x4 block_cyclic grid=16777216x1",
                        "6x5 tile=2x1 random seed=5 ranks=1000000", "9x7 tile=3x2 block_cyclic grid=4x5000 src=3x17"}) {
    const Layout src = Layout::parse(s);
    for (index_t p : {1, 2, 3}) {
      std::vector<DimPartition> patches;
      for (int d = 0; d < 2; ++d) patches.push_back(DimPartition::regular(src.shape()[d], p));
      const Layout b = placement(PlacementRule::balanced, src, patches);
      SCOPED_TRACE(b.spec());
      const int R = src.ownership().ranks_needed();
      ASSERT_EQ(b.check(R), "");
      const auto parts = oracle_parts(src, b);
      const std::vector<int> ob = owners_of(b);
      const index_t n = static_cast<index_t>(ob.size());
      ASSERT_GE(R, n);
      std::vector<int> sorted = ob;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "two patches on one rank";
      EXPECT_GE(sorted.front(), 0);
      EXPECT_LT(sorted.back(), R);
      std::map<int, int> renumber;
      for (const auto& pr : parts)
        for (auto [r, v] : pr) renumber.emplace(r, 0);
      int h = 0;
      for (auto& [r, id] : renumber) id = h++;
      std::vector<std::map<int, index_t>> small(parts.size());
      for (size_t i = 0; i < parts.size(); ++i)
        for (auto [r, v] : parts[i]) small[i][renumber[r]] = v;
      EXPECT_EQ(kept(parts, ob), min_cost_flow_balanced(small, h + static_cast<int>(n)));
    }
  }
  // 40 of 64 ranks hold data, 160 or 40 patches: the free ranks are deficits.
  const Layout src = Layout::parse("40x4 tile=1x1 block_cyclic grid=64x1");
  for (index_t p : {1, 2}) {
    const std::vector<DimPartition> patches = {DimPartition::regular(40, p), DimPartition::regular(4, 1)};
    const Layout b = placement(PlacementRule::balanced, src, patches);
    SCOPED_TRACE(b.spec());
    const auto parts = oracle_parts(src, b);
    const std::vector<int> ob = owners_of(b);
    std::vector<index_t> load(64, 0);
    for (int r : ob) ++load[r];
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_EQ(*lo, static_cast<index_t>(ob.size()) / 64);
    EXPECT_LE(*hi - *lo, 1);
    EXPECT_EQ(kept(parts, ob), min_cost_flow_balanced(parts, 64));
  }
}

TEST(Placement, ChecksItsSource) {
  EXPECT_NE(Layout::parse("8x8 tile=2x2 greedy of=(8x9 tile=4x4 block_cyclic grid=2x2)").check(4).find("must be equal"),
            std::string::npos);
  EXPECT_NE(Layout::parse("8x8 tile=2x2 greedy of=(8x8 tile=0x4)").check(4).find("placement source layout"),
            std::string::npos);
  const Layout b = Layout::parse("8x8 tile=2x2 balanced of=(8x8 tile=4x4 block_cyclic grid=2x2)");
  EXPECT_NE(b.check(3).find("needs 4 ranks"), std::string::npos);
  EXPECT_THROW(placement_summary(Layout::parse("8x8 tile=2x2 block_cyclic grid=2x2")), Error);
}

// Paper 003's two communication patterns are existing strategies: when the
// source is a block distribution (one tile per rank), each piece of a patch
// that moves is one segment, so `segment` sends one message per (patch, holder)
// pair: per patch; `p2p` sends one message per peer: per rank.
TEST(Placement, PerPatchIsSegmentPerRankIsP2p) {
  for (const char* rule : {"greedy", "balanced"}) {
    const std::string src_spec = "40x36x20 tile=20x18x10 block_cyclic grid=2x2x2";
    const Layout src = Layout::parse(src_spec);
    const Layout dst = Layout::parse(std::string("40x36x20 tile=7x6x8 ") + rule + " of=(" + src_spec + ")");
    SCOPED_TRACE(dst.spec());
    const auto parts = oracle_parts(src, dst);
    const std::vector<int> owner = owners_of(dst);
    std::vector<index_t> pieces(8, 0);  // per source rank: patch pieces it sends
    std::vector<std::vector<char>> peers(8, std::vector<char>(8, 0));
    for (size_t p = 0; p < parts.size(); ++p)
      for (auto [r, v] : parts[p])
        if (r != owner[p]) ++pieces[r], peers[r][owner[p]] = 1;
    for (int r = 0; r < 8; ++r) {
      const RankPlan rp = plan_rank(src, dst, Region::whole(src.shape()), r, 8);
      EXPECT_EQ(rp.stats.segments_sent, pieces[r]) << "rank " << r;
      EXPECT_EQ(rp.stats.messages_sent, std::count(peers[r].begin(), peers[r].end(), 1)) << "rank " << r;
    }
  }
}
