// Paper 001 schedules (src/plan/schedule.hpp), without MPI: their properties for
// every P <= 128 and K <= 32, data moved by them against a serial oracle (the
// block-cyclic owner of every element, computed directly), and the edge colouring
// of `phased` on random graphs and on every plan the conformance generator makes;
// the pieces of a message that `phased` sends under a memory budget (plan/pieces.hpp).
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "../common/random_layout.hpp"
#include "plan/pieces.hpp"
#include "plan/schedule.hpp"

using namespace redist;
using namespace redist::schedule;
using redist::testing::Rng;

namespace {

// Properties every r -> K*r schedule has: K phases (the fewest: each process holds
// K blocks and sends one per phase), entry p of each phase sent by p, every block
// (p, b) sent once and every slot (q, t) filled once, each move obeying Eq. 4.
void check_expand(const Schedule& s, int P, int K, const std::string& what) {
  ASSERT_EQ(s.size(), static_cast<size_t>(K)) << what;
  std::vector<char> sent(static_cast<size_t>(P) * K, 0), filled(static_cast<size_t>(P) * K, 0);
  for (const Phase& ph : s) {
    ASSERT_EQ(ph.size(), static_cast<size_t>(P)) << what;
    for (int p = 0; p < P; ++p) {
      const Move& m = ph[p];
      ASSERT_EQ(m.src_rank, p) << what;
      ASSERT_TRUE(m.src_index >= 0 && m.src_index < K && m.dst_rank >= 0 && m.dst_rank < P && m.dst_index >= 0 &&
                  m.dst_index < K)
          << what;
      ASSERT_EQ(index_t{P} * m.src_index + p, index_t{K} * m.dst_rank + m.dst_index) << what << " (Eq. 4)";
      ASSERT_EQ(sent[p * K + m.src_index]++, 0) << what << ": block sent twice";
      ASSERT_EQ(filled[m.dst_rank * K + m.dst_index]++, 0) << what << ": slot filled twice";
    }
  }
}

TEST(Schedule, OptimalIsContentionFreeForAllPUpTo128AndKUpTo32) {
  for (int P = 1; P <= 128; ++P)
    for (int K = 1; K <= 32; ++K) {
      const std::string what = "P=" + std::to_string(P) + " K=" + std::to_string(K);
      const Schedule s = expand_optimal(P, K);
      check_expand(s, P, K, what);
      if (HasFatalFailure()) return;
      // Each process sends to exactly one and receives from exactly one per phase.
      ASSERT_EQ(max_receives_per_phase(s, P), 1) << what;
      const Schedule r = receive_schedule(s, P);
      for (size_t k = 0; k < s.size(); ++k)
        for (int q = 0; q < P; ++q) ASSERT_EQ(s[k][r[k][q].src_rank], r[k][q]) << what;
      // Reversed (K*r -> r): still K phases, each a permutation.
      const Schedule v = reverse(s);
      ASSERT_EQ(max_receives_per_phase(v, P), 1) << what;
      for (size_t k = 0; k < v.size(); ++k)
        for (int q = 0; q < P; ++q) ASSERT_EQ(v[k][q].src_rank, q) << what;
    }
}

TEST(Schedule, SimpleAndRandomSendEveryBlockOnceButContend) {
  for (int P = 1; P <= 128; P += (P < 16 ? 1 : 7))
    for (int K = 1; K <= 32; ++K) {
      const std::string what = "P=" + std::to_string(P) + " K=" + std::to_string(K);
      const Schedule s = expand_simple(P, K);
      check_expand(s, P, K, "simple " + what);
      for (int k = 0; k < K; ++k)
        for (int p = 0; p < P; ++p) ASSERT_EQ(s[k][p].src_index, k) << what << " (Eq. 2)";
      check_expand(expand_random(P, K, 7u * P + K), P, K, "random " + what);
      if (HasFatalFailure()) return;
    }
  // The hot spot of sec. 2.2.2: P = 4, K = 3, phase 0 sends blocks 0..3 to 0, 0, 0, 1.
  EXPECT_EQ(max_receives_per_phase(expand_simple(4, 3), 4), 3);
  EXPECT_THROW(receive_schedule(expand_simple(4, 3), 4), Error);
  // The random schedule is repeatable and depends on its seed.
  EXPECT_EQ(expand_random(16, 12, 5), expand_random(16, 12, 5));
  EXPECT_NE(expand_random(16, 12, 5), expand_random(16, 12, 6));
}

// The paper's example (sec. 2.2.2, Fig. 8): P = 16, K = 12, g = 4, P' = 4, K' = 3.
TEST(Schedule, PaperExampleP16K12) {
  const Schedule s = expand_optimal(16, 12);
  check_expand(s, 16, 12, "P=16 K=12");
  EXPECT_EQ(max_receives_per_phase(s, 16), 1);
  // Processes with the same p' = p / g send to the same set of processes (Eq. 6):
  // processes 0..3 send to floor((P' b' + 0) / K') + P' beta = {0, 1, 2} + 4 beta.
  for (int p = 0; p < 4; ++p) {
    std::set<int> to;
    for (const Phase& ph : s) to.insert(ph[p].dst_rank);
    EXPECT_EQ(to, (std::set<int>{0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14})) << p;
  }
}

// One superblock or more of a 1-D array, moved by the moves of `s` with block
// size `r` on the sending side (b: local block index) and r*K on the receiving
// one (t: slot), or the reverse for a reversed schedule.
using Local = std::vector<std::vector<index_t>>;  // per process: global element ids
Local apply(const Local& from, const Schedule& s, int P, int K, index_t r) {
  Local to(static_cast<size_t>(P), std::vector<index_t>(from[0].size(), -1));
  const index_t super = index_t{K} * r;  // elements per process per superblock
  const index_t nsuper = static_cast<index_t>(from[0].size()) / super;
  for (const Phase& ph : s)
    for (const Move& m : ph)
      for (index_t sb = 0; sb < nsuper; ++sb)
        for (index_t e = 0; e < r; ++e) {
          // r -> K*r: block b at (sb*K + b)*r; slot t at sb*K*r + t*r. Both are
          // sb*super + index*r, so one formula serves both directions.
          to[m.dst_rank][sb * super + m.dst_index * r + e] = from[m.src_rank][sb * super + m.src_index * r + e];
        }
  return to;
}

// The oracle: element m of a block-cyclic array with block size r on P processes.
Local distribute(index_t M, int P, index_t r) {
  Local out(static_cast<size_t>(P));
  for (index_t m = 0; m < M; ++m) out[(m / r) % P].push_back(m);  // in local order (Eq. 1)
  return out;
}

// r1 -> r2 through l = lcm(r1, r2) for P <= 128 and factors K1 = l / r1, K2 = l / r2
// up to 32: each step is the optimal schedule of its factor (K1 phases, then K2,
// the fewest: each process holds K blocks of a superblock and sends one per
// phase), every phase of either step a permutation, and the two steps move
// every element of two superblocks to its r2 owner (the oracle).
TEST(Schedule, ResizePropertiesUpTo128) {
  const std::pair<index_t, index_t> sizes[] = {{1, 32}, {32, 1}, {3, 32}, {32, 3}, {5, 7}, {7, 5}, {12, 18},
                                               {31, 2}, {4, 6},  {9, 16}, {1, 1},  {2, 2}};
  for (int P = 1; P <= 128; P += (P < 16 ? 1 : 13))
    for (auto [r1, r2] : sizes) {
      const std::string what = "P=" + std::to_string(P) + " r1=" + std::to_string(r1) + " r2=" + std::to_string(r2);
      const Resize z = resize(P, r1, r2);
      ASSERT_EQ(z.l, std::lcm(r1, r2)) << what;
      ASSERT_LE(std::max(z.K1, z.K2), 32) << what;
      ASSERT_EQ(z.expand.size(), static_cast<size_t>(z.K1 > 1 ? z.K1 : 0)) << what;
      ASSERT_EQ(z.shrink.size(), static_cast<size_t>(z.K2 > 1 ? z.K2 : 0)) << what;
      if (z.K1 > 1) {
        check_expand(z.expand, P, z.K1, "expand " + what);
        ASSERT_EQ(max_receives_per_phase(z.expand, P), 1) << what;
      }
      if (z.K2 > 1) {
        check_expand(reverse(z.shrink), P, z.K2, "shrink " + what);
        ASSERT_EQ(max_receives_per_phase(z.shrink, P), 1) << what;
        for (const Phase& ph : z.shrink)
          for (int q = 0; q < P; ++q) ASSERT_EQ(ph[q].src_rank, q) << what;  // each sends one per phase
      }
      if (HasFatalFailure()) return;
      const index_t M = 2 * P * z.l;
      Local a = distribute(M, P, r1);
      if (z.K1 > 1) a = apply(a, z.expand, P, z.K1, r1);
      if (z.K2 > 1) a = apply(a, z.shrink, P, z.K2, r2);
      ASSERT_EQ(a, distribute(M, P, r2)) << what;
    }
}

TEST(Schedule, ResizeThroughLcmMovesTheData) {
  for (int P = 1; P <= 9; ++P)
    for (index_t r1 = 1; r1 <= 6; ++r1)
      for (index_t r2 = 1; r2 <= 6; ++r2) {
        const Resize z = resize(P, r1, r2);
        ASSERT_EQ(z.l, std::lcm(r1, r2));
        const index_t M = 2 * P * z.l;  // two superblocks
        Local a = distribute(M, P, r1);
        if (z.K1 > 1) a = apply(a, z.expand, P, z.K1, r1);
        ASSERT_EQ(a, distribute(M, P, z.l)) << "P=" << P << " r1=" << r1 << " l=" << z.l;
        if (z.K2 > 1) a = apply(a, z.shrink, P, z.K2, r2);
        ASSERT_EQ(a, distribute(M, P, r2)) << "P=" << P << " r1=" << r1 << " r2=" << r2;
      }
}

// 2-D: a column-major matrix on a P0 x P1 grid, block sizes changed one dimension
// at a time within the grid's columns, then its rows (sec. 4).
TEST(Schedule, MultiDimPerDimensionOnSubgroups) {
  for (auto [P0, P1] : {std::pair{2, 3}, {3, 2}, {1, 4}, {4, 4}})
    for (auto [a, b] : {std::pair<index_t, index_t>{2, 3}, {3, 1}, {4, 4}}) {
      const std::vector<int> grid{P0, P1};
      const std::vector<index_t> r1{a, b}, r2{b + 1, a};
      const std::vector<DimStep> steps = multi_dim(grid, r1, r2);
      // Extents: a multiple of every superblock (P_d * lcm).
      const index_t M0 = P0 * std::lcm(r1[0], r2[0]) * 2, M1 = P1 * std::lcm(r1[1], r2[1]);
      // Owner and local position of global (i, j) with block sizes (s0, s1).
      auto place = [&](index_t s0, index_t s1) {
        std::vector<std::vector<index_t>> out(static_cast<size_t>(P0 * P1));
        for (index_t j = 0; j < M1; ++j)
          for (index_t i = 0; i < M0; ++i) {
            const int rank = static_cast<int>((i / s0) % P0 + P0 * ((j / s1) % P1));
            out[rank].push_back(i + M0 * j);  // column-major local order
          }
        return out;
      };
      std::vector<std::vector<index_t>> data = place(r1[0], r1[1]);
      index_t s0 = r1[0], s1 = r1[1];
      for (const DimStep& st : steps) {
        const int Pd = grid[st.dim];
        ASSERT_EQ(st.groups.size(), static_cast<size_t>(P0 * P1 / Pd));
        const index_t rows = M0 / P0, cols = M1 / P1;  // local extents (full superblocks)
        for (const std::vector<int>& g : st.groups) {
          // 1-D lines along st.dim through the group's local arrays.
          const index_t lines = st.dim == 0 ? cols : rows, len = st.dim == 0 ? rows : cols;
          for (index_t line = 0; line < lines; ++line) {
            Local l(static_cast<size_t>(Pd));
            auto at = [&](index_t k) { return st.dim == 0 ? k + rows * line : line + rows * k; };
            for (int i = 0; i < Pd; ++i)
              for (index_t k = 0; k < len; ++k) l[i].push_back(data[g[i]][at(k)]);
            const Resize& z = st.resize;
            if (z.K1 > 1) l = apply(l, z.expand, Pd, z.K1, z.r1);
            if (z.K2 > 1) l = apply(l, z.shrink, Pd, z.K2, z.r2);
            for (int i = 0; i < Pd; ++i)
              for (index_t k = 0; k < len; ++k) data[g[i]][at(k)] = l[i][k];
          }
        }
        (st.dim == 0 ? s0 : s1) = st.dim == 0 ? r2[0] : r2[1];
        ASSERT_EQ(data, place(s0, s1)) << "grid " << P0 << "x" << P1 << " after dim " << st.dim;
      }
      EXPECT_EQ(data, place(r2[0], r2[1]));
    }
}

// The storage offsets of a run's elements in packed (message) order: the oracle
// for the pieces, written out element by element.
void offsets(const Segment& s, std::vector<index_t>& out) {
  const int nd = s.shape.ndim();
  for (index_t j1 = 0; j1 < s.count[1]; ++j1)
    for (index_t j0 = 0; j0 < s.count[0]; ++j0)
      for (index_t e = 0; e < s.shape.volume(); ++e) {
        index_t o = s.at.offset + j0 * s.step[0] + j1 * s.step[1], rest = e;
        for (int d = 0; d < nd; ++d) o += (rest % s.shape[d]) * s.at.strides[d], rest /= s.shape[d];
        out.push_back(o);
      }
}

// Any range [a, b) of a message of random runs (1-4 dimensions, repetitions,
// storage strides of a column-major tile): its pieces cover exactly the range's
// elements, in order, each piece at its place, each with its own contiguous run.
TEST(Pieces, RangesOfMessagesAgainstElementOrder) {
  Rng rng(31);
  for (int c = 0; c < 300; ++c) {
    auto pick = [&](index_t lo, index_t hi) { return redist::testing::uniform(rng, lo, hi); };
    std::vector<Segment> segs(static_cast<size_t>(pick(1, 4)));
    const int nd = static_cast<int>(pick(1, 4));
    for (Segment& s : segs) {
      s.shape = Coord(nd), s.at.strides = Coord(nd);
      index_t st = 1;
      for (int d = 0; d < nd; ++d) {
        s.shape[d] = pick(1, nd == 1 ? 40 : 6);
        s.at.strides[d] = st;
        st *= s.shape[d] + pick(0, 2);  // a tile's leading dimension, maybe wider than the box
      }
      s.at.offset = pick(0, 50);
      s.count = {pick(1, 3), pick(1, 40)};
      s.step = {st + pick(0, 5), (st + 5) * 3 + pick(0, 5)};
      s.run = contiguous_run(s.shape, s.at.strides);
    }
    std::vector<index_t> all;
    for (const Segment& s : segs) offsets(s, all);
    const index_t n = static_cast<index_t>(all.size());
    for (int k = 0; k < 20; ++k) {
      const index_t a = pick(0, n), b = pick(a, n);
      std::vector<index_t> got(static_cast<size_t>(b - a), -1);
      bool ok = true;
      index_t pieces = 0;
      detail::for_range(segs, a, b, [&](const Segment& piece, index_t at) {
        ++pieces;
        ok = ok && piece.run == contiguous_run(piece.shape, piece.at.strides);
        std::vector<index_t> o;
        offsets(piece, o);
        for (size_t i = 0; i < o.size(); ++i) {
          const index_t where = at + static_cast<index_t>(i);
          if (where < 0 || where >= b - a || got[static_cast<size_t>(where)] != -1) ok = false;
          else got[static_cast<size_t>(where)] = o[i];
        }
      });
      ASSERT_TRUE(ok) << "case " << c << " range [" << a << ", " << b << "): a piece outside it, twice, or a bad run";
      ASSERT_EQ(got, std::vector<index_t>(all.begin() + a, all.begin() + b)) << "case " << c << " [" << a << ", " << b << ")";
      // Few pieces however many repetitions the range holds (pieces.hpp): whole
      // rows of repetitions stay one piece (a ring's slot across a run of 1 x 994
      // repetitions was 500 one-element pieces).
      EXPECT_LE(pieces, static_cast<index_t>(segs.size()) * (2 * (2 * nd + 1) + 3)) << "case " << c;
    }
  }
}

// A colouring is proper and uses exactly max-degree colours.
void check_colouring(int nl, int nr, const std::vector<std::pair<int, int>>& edges, const std::string& what) {
  const std::vector<int> c = colour_edges(nl, nr, edges);
  const int D = max_degree(nl, nr, edges);
  ASSERT_EQ(c.size(), edges.size());
  std::set<std::pair<int, int>> left, right;  // (vertex, colour)
  int used = 0;
  for (size_t e = 0; e < edges.size(); ++e) {
    ASSERT_TRUE(c[e] >= 0 && c[e] < D) << what;
    ASSERT_TRUE(left.insert({edges[e].first, c[e]}).second) << what << ": sender twice in one round";
    ASSERT_TRUE(right.insert({edges[e].second, c[e]}).second) << what << ": receiver twice in one round";
    used = std::max(used, c[e] + 1);
  }
  EXPECT_EQ(used, D) << what;
}

TEST(Schedule, EdgeColouringRandomGraphs) {
  Rng rng(99);
  for (int c = 0; c < 400; ++c) {
    auto pick = [&](int lo, int hi) { return static_cast<int>(redist::testing::uniform(rng, lo, hi)); };
    const int nl = pick(1, 40), nr = pick(1, 40);
    std::set<std::pair<int, int>> set;
    const index_t ne = redist::testing::uniform(rng, 0, index_t{nl} * nr);
    for (index_t i = 0; i < ne; ++i)
      set.insert({pick(0, nl - 1), pick(0, nr - 1)});
    std::vector<std::pair<int, int>> edges(set.begin(), set.end());
    std::shuffle(edges.begin(), edges.end(), rng);
    check_colouring(nl, nr, edges, "graph " + std::to_string(c));
    if (HasFatalFailure()) return;
  }
  // Complete bipartite K_{n,n}: n rounds, as MPI_Alltoall's pairwise exchange.
  std::vector<std::pair<int, int>> all;
  for (int u = 0; u < 64; ++u)
    for (int v = 0; v < 64; ++v) all.push_back({u, v});
  check_colouring(64, 64, all, "K64,64");
}

// The sender/receiver graph of every plan the conformance generator makes (as
// `phased` builds it: one edge per pair of ranks that exchange data, local
// pieces aside) is coloured with exactly its maximum degree of rounds.
TEST(Schedule, EdgeColouringOnGeneratorPlans) {
  Rng rng(2024);
  for (int c = 0; c < 600; ++c) {
    const int nranks = static_cast<int>(redist::testing::uniform(rng, 1, 8));
    const auto [src, dst, r] = redist::testing::random_case(rng, nranks);
    std::vector<std::pair<int, int>> edges;
    std::set<std::pair<int, int>> received;
    for (int p = 0; p < nranks; ++p) {
      const RankPlan rp = plan_rank(src, dst, r, p, nranks);
      for (const PeerPlan& s : rp.sends) edges.push_back({p, s.peer});
      for (const PeerPlan& s : rp.receives) received.insert({s.peer, p});
    }
    using Pairs = std::set<std::pair<int, int>>;
    ASSERT_EQ(Pairs(edges.begin(), edges.end()), received);
    check_colouring(nranks, nranks, edges,
                    "case " + std::to_string(c) + " [" + src.spec() + "] -> [" + dst.spec() + "]");
    if (HasFatalFailure()) return;
  }
}

// The paper's case in a plan (paper_rounds, what `phased` runs there): r -> K*r
// and K*r -> r, whole arrays and ragged ones, a region that keeps indices in
// place. For K <= P the phases are the optimal schedule's pairs (self moves
// aside), each a permutation, K of them; for K > P (up to P + 3) every pair, in
// the P - 1 shift phases. Every pair of ranks the plan exchanges data between
// stands in exactly one, and no phase holds a pair the plan does not have when
// the array is whole superblocks. Anything else (a moved region, a 2-D grid, an
// offset, r2 / r1 not whole) is not the paper's case.
TEST(Schedule, PaperRoundsOfPlans) {
  int cases = 0;
  for (int P = 1; P <= 12; ++P)
    for (int K = 2; K <= P + 3; ++K)
      for (index_t r : {1, 3})
        for (index_t n : {index_t{P} * K * r * 2, index_t{P} * K * r * 2 + 5}) {
          for (bool shrink : {false, true}) {
            const auto spec = [&](index_t t) {
              return std::to_string(n) + " tile=" + std::to_string(t) + " block_cyclic grid=" + std::to_string(P);
            };
            const Layout a = Layout::parse(spec(shrink ? K * r : r)), b = Layout::parse(spec(shrink ? r : K * r));
            const std::string what = a.spec() + " -> " + b.spec();
            const PairPhases ph = paper_rounds(a, b, Region::whole(a.shape()), P);
            // K > P: every pair, one message each, P - 1 phases (the closed form, shift_rounds).
            const int phases = K <= P ? K : P - 1;
            ASSERT_EQ(ph.size(), static_cast<size_t>(phases)) << what;
            const Schedule want = shrink ? reverse(expand_optimal(P, K)) : expand_optimal(P, K);
            std::set<std::pair<int, int>> in_phases;
            for (int k = 0; k < phases; ++k) {
              std::vector<std::pair<int, int>> pairs;
              if (K <= P) {
                for (const Move& m : want[k])
                  if (m.src_rank != m.dst_rank) pairs.push_back({m.src_rank, m.dst_rank});
              } else {
                for (int x = 0; x < P; ++x) pairs.push_back({x, (x + k + 1) % P});
                EXPECT_EQ(ph[k].size(), static_cast<size_t>(P)) << what << ", phase " << k;  // a permutation
              }
              EXPECT_EQ(ph[k], pairs) << what << ", phase " << k;
              std::set<int> senders, receivers;
              for (auto [x, y] : ph[k]) {
                EXPECT_TRUE(senders.insert(x).second && receivers.insert(y).second) << what << ", phase " << k;
                EXPECT_TRUE(in_phases.insert({x, y}).second) << what << ": pair " << x << "," << y << " twice";
              }
            }
            std::set<std::pair<int, int>> in_plan;
            for (int p = 0; p < P; ++p)
              for (const PeerPlan& s : plan_rank(a, b, Region::whole(a.shape()), p, P).sends) in_plan.insert({p, s.peer});
            for (const auto& e : in_plan) EXPECT_TRUE(in_phases.count(e)) << what << ": plan pair not scheduled";
            if (n % (index_t{P} * K * r) == 0) {
              EXPECT_EQ(in_plan, in_phases) << what;
            }
            ++cases;
          }
        }
  EXPECT_GT(cases, 200);
  const Layout a = Layout::parse("96 tile=2 block_cyclic grid=4"), b = Layout::parse("96 tile=8 block_cyclic grid=4");
  EXPECT_EQ(paper_rounds(a, b, Region::whole(a.shape()), 4).size(), 4u);
  EXPECT_EQ(paper_rounds(Layout::parse("96 tile=2 block_cyclic grid=4"), Layout::parse("96 tile=16 block_cyclic grid=4"),
                         Region::whole(a.shape()), 4),
            shift_rounds(4));  // K = 8 > P: every pair, 3 phases
  EXPECT_TRUE(paper_rounds(a, b, Region::parse("50 from=3 to=0"), 4).empty());
  EXPECT_TRUE(paper_rounds(a, Layout::parse("96 tile=5 block_cyclic grid=4"), Region::whole(a.shape()), 4).empty());  // 5 / 2
  EXPECT_TRUE(paper_rounds(a, b, Region::whole(a.shape()), 5).empty());  // grid 4 on 5 ranks
  const Layout c = Layout::parse("8x96 tile=8x2 block_cyclic grid=1x4"), d = Layout::parse("8x96 tile=8x8 block_cyclic grid=1x4");
  EXPECT_TRUE(paper_rounds(c, d, Region::whole(c.shape()), 4).empty());  // 2-D: the colouring
}

}  // namespace
