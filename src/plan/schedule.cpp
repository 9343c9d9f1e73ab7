// Paper 001 (Walker & Otto) schedules and the edge colouring of `phased`; see schedule.hpp.
#include "plan/schedule.hpp"

#include <algorithm>
#include <numeric>

#include "redist/error.hpp"

namespace redist::schedule {
namespace {

void check_pk(int P, int K) {
  if (P < 1 || K < 1) detail::fail("schedule: P = ", P, " and K = ", K, " must be >= 1");
}

// Eq. 4 for one superblock: process p's local block b is global block B = P*b + p,
// which lands in process q = B / K, slot t = B mod K.
Move expand_move(int P, int K, int p, index_t b) {
  const index_t B = index_t{P} * b + p;
  return {p, b, static_cast<int>(B / K), B % K};
}

// splitmix64: the random schedule's generator (repeatable on every platform).
std::uint64_t next(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Schedule expand_simple(int P, int K) {
  check_pk(P, K);
  Schedule s(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k)
    for (int p = 0; p < P; ++p) s[k].push_back(expand_move(P, K, p, k));  // b(k, p) = k (Eq. 2)
  return s;
}

Schedule expand_random(int P, int K, std::uint64_t seed) {
  check_pk(P, K);
  Schedule s(static_cast<size_t>(K));
  std::uint64_t state = seed;
  std::vector<index_t> order(static_cast<size_t>(K));
  for (int p = 0; p < P; ++p) {
    std::iota(order.begin(), order.end(), index_t{0});
    for (int i = K - 1; i > 0; --i) std::swap(order[i], order[next(state) % static_cast<std::uint64_t>(i + 1)]);
    for (int k = 0; k < K; ++k) s[k].push_back(expand_move(P, K, p, order[k]));
  }
  return s;
}

// Sec. 2.2.2. With g = gcd(P, K), P = g*P', K = g*K', p = g*p' + alpha, b = K'*beta + b',
// q = P'*beta + q', t = g*t' + alpha, Eq. 4 reduces to P'*b' + p' = K'*q' + t' (Eq. 8).
// P' and K' are relatively prime, so walking the diagonal i = 0 .. P'K'-1 of the
// K' x P' matrix visits every (t', p') = (i mod K', i mod P') once, with
// b' = i / P' and q' = i / K': in phase t' process p' sends to q', and q' receives
// from that p' alone. Each entry becomes a g x g permutation block: phase
// (t', gamma) sends beta = (alpha + gamma) mod g, a Latin square, so every phase
// stays a permutation and each process sends every beta once.
Schedule expand_optimal(int P, int K) {
  check_pk(P, K);
  const int g = std::gcd(P, K), Pp = P / g, Kp = K / g;
  Schedule s(static_cast<size_t>(K), Phase(static_cast<size_t>(P)));
  for (int i = 0; i < Pp * Kp; ++i) {
    const int tp = i % Kp, pp = i % Pp, bp = i / Pp, qp = i / Kp;
    for (int gamma = 0; gamma < g; ++gamma)
      for (int alpha = 0; alpha < g; ++alpha) {
        const int beta = (alpha + gamma) % g, p = g * pp + alpha;
        s[static_cast<size_t>(tp * g + gamma)][static_cast<size_t>(p)] =
            Move{p, index_t{Kp} * beta + bp, Pp * beta + qp, index_t{g} * tp + alpha};
      }
  }
  return s;
}

Schedule reverse(const Schedule& s) {
  Schedule r = s;
  for (Phase& ph : r) {
    for (Move& m : ph) m = Move{m.dst_rank, m.dst_index, m.src_rank, m.src_index};
    std::sort(ph.begin(), ph.end(), [](const Move& a, const Move& b) { return a.src_rank < b.src_rank; });
  }
  return r;
}

Schedule receive_schedule(const Schedule& s, int P) {
  Schedule r(s.size(), Phase(static_cast<size_t>(P)));
  for (size_t k = 0; k < s.size(); ++k) {
    std::vector<char> seen(static_cast<size_t>(P), 0);
    for (const Move& m : s[k]) {
      if (m.dst_rank < 0 || m.dst_rank >= P || seen[m.dst_rank]++)
        detail::fail("receive_schedule: phase ", k, " is not contention free (process ", m.dst_rank,
                     " receives twice)");
      r[k][m.dst_rank] = m;
    }
    if (std::count(seen.begin(), seen.end(), 1) != P)
      detail::fail("receive_schedule: in phase ", k, " a process receives nothing");
  }
  return r;
}

int max_receives_per_phase(const Schedule& s, int P) {
  int worst = 0;
  for (const Phase& ph : s) {
    std::vector<int> n(static_cast<size_t>(P), 0);
    for (const Move& m : ph) worst = std::max(worst, ++n[static_cast<size_t>(m.dst_rank)]);
  }
  return worst;
}

Resize resize(int P, index_t r1, index_t r2) {
  if (r1 < 1 || r2 < 1) detail::fail("schedule: block sizes ", r1, " and ", r2, " must be >= 1");
  Resize z;
  z.r1 = r1, z.r2 = r2, z.l = std::lcm(r1, r2);
  z.K1 = static_cast<int>(z.l / r1), z.K2 = static_cast<int>(z.l / r2);
  if (z.K1 > 1) z.expand = expand_optimal(P, z.K1);
  if (z.K2 > 1) z.shrink = reverse(expand_optimal(P, z.K2));
  return z;
}

std::vector<DimStep> multi_dim(std::span<const int> grid, std::span<const index_t> r1,
                               std::span<const index_t> r2) {
  const size_t n = grid.size();
  if (r1.size() != n || r2.size() != n) detail::fail("multi_dim: grid, r1 and r2 must have the same length");
  int total = 1;
  for (int g : grid) {
    if (g < 1) detail::fail("multi_dim: grid sizes must be >= 1");
    total *= g;
  }
  std::vector<DimStep> steps;
  for (size_t d = 0; d < n; ++d) {
    if (r1[d] == r2[d]) continue;
    DimStep st;
    st.dim = static_cast<int>(d);
    st.resize = resize(grid[d], r1[d], r2[d]);
    int stride = 1;
    for (size_t e = 0; e < d; ++e) stride *= grid[e];
    // Ranks whose coordinate in d is 0, in rank order, start one group each.
    for (int rank = 0; rank < total; ++rank) {
      if ((rank / stride) % grid[d] != 0) continue;
      std::vector<int> g(static_cast<size_t>(grid[d]));
      for (int i = 0; i < grid[d]; ++i) g[i] = rank + i * stride;
      st.groups.push_back(std::move(g));
    }
    steps.push_back(std::move(st));
  }
  return steps;
}

int max_degree(int nleft, int nright, std::span<const std::pair<int, int>> edges) {
  std::vector<int> dl(static_cast<size_t>(nleft), 0), dr(static_cast<size_t>(nright), 0);
  int d = 0;
  for (auto [u, v] : edges) d = std::max({d, ++dl[u], ++dr[v]});
  return d;
}

// For each edge (u, v): a colour a free at u and b free at v. When a is also free
// at v, take it; otherwise swap a and b along the path from v that alternates
// a, b, a, ... (it cannot reach u: in a bipartite graph it would arrive there by
// an edge coloured b... and u has no a-edge to leave by; Konig), which frees a at v.
namespace {

// r when `l` is 1-D block-cyclic with tiles of r on P processes in plain grid
// order (paper_rounds), else 0.
index_t plain_cyclic_tile(const Layout& l, int P) {
  if (l.ndim() != 1 || l.ownership().kind() != Ownership::Kind::block_cyclic) return 0;
  const BlockCyclicParams& b = l.ownership().bc();
  const DimPartition& d = l.partition(0);
  const bool plain = b.grid.ndim() == 1 && b.grid[0] == P && b.first_rank == 0 && !b.map &&
                     (b.source.ndim() == 0 || b.source[0] == 0) && (b.super.ndim() == 0 || b.super[0] == 1) &&
                     d.is_regular() && d.offset() == 0;
  return plain ? d.tile() : 0;
}

}  // namespace

PairPhases shift_rounds(int P) {
  PairPhases out(static_cast<size_t>(std::max(0, P - 1)));
  for (int j = 1; j < P; ++j)
    for (int p = 0; p < P; ++p) out[static_cast<size_t>(j - 1)].push_back({p, (p + j) % P});
  return out;
}

PairPhases paper_rounds(const Layout& src, const Layout& dst, const Region& region, int P) {
  const index_t r1 = plain_cyclic_tile(src, P), r2 = plain_cyclic_tile(dst, P);
  if (r1 == 0 || r2 == 0 || region.permutes() || !(region.src_offset == region.dst_offset)) return {};
  const index_t lo = std::min(r1, r2), hi = std::max(r1, r2);
  if (hi % lo != 0 || hi / lo < 2) return {};
  if (hi / lo > P) return shift_rounds(P);
  Schedule s = expand_optimal(P, static_cast<int>(hi / lo));
  if (r1 > r2) s = reverse(s);
  PairPhases out(s.size());
  for (size_t k = 0; k < s.size(); ++k)
    for (const Move& m : s[k])
      if (m.src_rank != m.dst_rank) out[k].push_back({m.src_rank, m.dst_rank});
  return out;
}

std::vector<int> colour_edges(int nleft, int nright, std::span<const std::pair<int, int>> edges) {
  const int D = max_degree(nleft, nright, edges);
  const size_t Ds = static_cast<size_t>(D);
  // at[side][vertex * D + colour]: the edge of that colour at the vertex, or -1.
  std::vector<int> at[2] = {std::vector<int>(static_cast<size_t>(nleft) * Ds, -1),
                            std::vector<int>(static_cast<size_t>(nright) * Ds, -1)};
  std::vector<int> colour(edges.size(), -1);
  auto slot = [&](int side, int e, int c) -> int& {
    const int vertex = side == 0 ? edges[e].first : edges[e].second;
    return at[side][static_cast<size_t>(vertex) * Ds + static_cast<size_t>(c)];
  };
  auto free_colour = [&](int side, int vertex) {
    const int* row = at[side].data() + static_cast<size_t>(vertex) * Ds;
    int c = 0;
    while (row[c] >= 0) ++c;
    return c;
  };
  std::vector<int> path;
  for (int e = 0; e < static_cast<int>(edges.size()); ++e) {
    const auto [u, v] = edges[e];
    // A colour free at both ends needs no flip; most edges find one, and the
    // alternating paths (up to every vertex long) stay rare.
    const int* ru = at[0].data() + static_cast<size_t>(u) * Ds;
    const int* rv = at[1].data() + static_cast<size_t>(v) * Ds;
    int both = 0;
    while (both < D && (ru[both] >= 0 || rv[both] >= 0)) ++both;
    if (both < D) {
      colour[e] = both;
      slot(0, e, both) = e, slot(1, e, both) = e;
      continue;
    }
    const int a = free_colour(0, u), b = free_colour(1, v);
    if (at[1][static_cast<size_t>(v) * Ds + a] >= 0) {
      path.clear();
      int side = 1, vertex = v, c = a;
      for (;;) {
        const int f = at[side][static_cast<size_t>(vertex) * Ds + static_cast<size_t>(c)];
        if (f < 0) break;
        path.push_back(f);
        side = 1 - side;
        vertex = side == 0 ? edges[f].first : edges[f].second;
        c = c == a ? b : a;
      }
      for (int f : path) slot(0, f, colour[f]) = -1, slot(1, f, colour[f]) = -1;
      for (int f : path) {
        colour[f] = colour[f] == a ? b : a;
        slot(0, f, colour[f]) = f, slot(1, f, colour[f]) = f;
      }
    }
    colour[e] = a;
    slot(0, e, a) = e, slot(1, e, a) = e;
  }
  return colour;
}

}  // namespace redist::schedule
