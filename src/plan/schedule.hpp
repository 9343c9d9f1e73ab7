// Communication schedules (paper 001, Walker & Otto, secs. 2.2 and 4), pure
// functions without MPI:
//  - the block size change r -> K*r of a 1-D block-cyclic array on P processes,
//    one superblock of P*K blocks (every superblock moves the same way): the
//    simple schedule (b(k,p) = k, Eq. 2), the random one, and the optimal,
//    contention-free one built from g = gcd(P, K) (Eqs. 3-8, Figs. 6-11);
//  - K*r -> r by running it in reverse, r1 -> r2 through l = lcm(r1, r2) in two
//    steps, and multi-D by 1-D steps on the rows / columns of the process grid;
//  - the rounds of a plan that is the paper's case (paper_rounds);
//  - for any plan: a proper edge colouring of the bipartite sender/receiver
//    graph with exactly max-degree colours (Konig), the rounds of `phased`.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "redist/geometry.hpp"
#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist::schedule {

// One block of a superblock moved in one phase: process `src_rank` sends its
// block `src_index` (local, within the superblock) to `dst_rank`, which stores it
// at `dst_index`. For r -> K*r the source index is the local block b (0..K-1) and
// the target index the slot t (0..K-1) of the receiver's one block of K*r (Eq. 4:
// P*b + p = K*q + t); the reverse swaps the two.
struct Move {
  int src_rank = 0;
  index_t src_index = 0;
  int dst_rank = 0;
  index_t dst_index = 0;
  friend bool operator==(const Move&, const Move&) = default;
};
using Phase = std::vector<Move>;     // ordered by src_rank: entry p is what process p sends
using Schedule = std::vector<Phase>;  // in the order the phases run

// r -> K*r on P processes (P >= 1, K >= 1): K phases, each process sends one
// block per phase. Simple: local block k in phase k (Eq. 2), hot spots.
Schedule expand_simple(int P, int K);
// Each process sends its K blocks in its own random order (seeded, repeatable).
Schedule expand_random(int P, int K, std::uint64_t seed);
// Optimal (sec. 2.2.2): in every phase each process also receives exactly one
// block (every phase is a permutation of the processes), from the schedule of the
// relatively prime P' = P/g, K' = K/g (walk the diagonal of the K' x P' matrix)
// expanded into g x g permutation blocks.
Schedule expand_optimal(int P, int K);
// K*r -> r: the same phases with source and target swapped (sec. 4).
Schedule reverse(const Schedule& s);

// The receive side of a schedule (sec. 2.2.3, Figs. 9-11): entry q of phase k is
// the move process q receives in phase k. Requires a contention-free schedule
// (every process receives exactly one block per phase); throws otherwise.
Schedule receive_schedule(const Schedule& s, int P);

// How many blocks the busiest process receives in one phase (1: contention free).
int max_receives_per_phase(const Schedule& s, int P);

// r1 -> r2 on P processes through l = lcm(r1, r2) (sec. 4): first r1 -> l
// (K1 = l / r1, optimal), then l -> r2 (K2 = l / r2, optimal reversed). A
// superblock is P*l elements in both steps. Either step is empty when its factor
// is 1.
struct Resize {
  index_t r1 = 1, r2 = 1, l = 1;
  int K1 = 1, K2 = 1;
  Schedule expand, shrink;  // expand: r1 -> l (blocks of r1); shrink: l -> r2 (blocks of r2)
};
Resize resize(int P, index_t r1, index_t r2);

// Multi-D (sec. 4): a block-cyclic array on a process grid (ranks column-major in
// the grid: rank = i0 + grid[0] * (i1 + grid[1] * ...)) changes its block sizes
// from r1 to r2 one dimension at a time, each 1-D step running within the groups
// of processes that differ only in that dimension's grid coordinate.
struct DimStep {
  int dim = 0;
  Resize resize;  // on grid[dim] processes
  // groups[c][i]: the global rank of member i (its coordinate in `dim`) of group c.
  std::vector<std::vector<int>> groups;
};
std::vector<DimStep> multi_dim(std::span<const int> grid, std::span<const index_t> r1,
                               std::span<const index_t> r2);

// The paper's case in a plan (sec. 2.2; K*r -> r by the reverse, sec. 4): source
// and target 1-D block-cyclic on P processes (grid P, ranks in grid order from 0,
// tile 0 on rank 0, no k-cyclic factor, no first-block offset) with block sizes r
// and K*r (or K*r and r), K >= 2, and a region that keeps every index where it
// is (from = to, no permutation). Then, for K <= P, the optimal schedule's phases
// as (sender, receiver) pairs, a process's move to itself left out: every pair of
// the plan stands in exactly one phase (a process's K blocks of a superblock go
// to K different processes), every phase is a permutation, and there are K, the
// fewest. For K > P a process's K blocks of a superblock reach every process
// (consecutive blocks land at most one process apart, from process 0 to P - 1),
// several blocks per pair: one message per pair, the pair graph complete, and its
// closed form is shift_rounds(P). Empty when the layouts are not that case.
using PairPhases = std::vector<std::vector<std::pair<int, int>>>;
PairPhases paper_rounds(const Layout& src, const Layout& dst, const Region& region, int P);
// Every ordered pair of P processes, self aside, in P - 1 phases (the fewest: each
// process has P - 1 peers): in phase j (1 .. P-1) process p sends to (p + j) mod P,
// a permutation. The K > P case of paper_rounds, either direction.
PairPhases shift_rounds(int P);

// A proper edge colouring of a bipartite graph with `nleft` and `nright` vertices
// and distinct edges (left, right): colour[e] in [0, D), D the maximum degree, no
// two edges of one vertex sharing a colour (Konig's theorem; alternating paths).
// Deterministic: the same edges in the same order give the same colours on every
// rank. Cost O(E * (D + V)).
std::vector<int> colour_edges(int nleft, int nright, std::span<const std::pair<int, int>> edges);
// Maximum degree of the graph (0 when it has no edge).
int max_degree(int nleft, int nright, std::span<const std::pair<int, int>> edges);

}  // namespace redist::schedule
