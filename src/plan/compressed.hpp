// Compressed planning (src/plan/compressed.cpp): runs of segments in closed form
// for two block-cyclic layouts over regular partitions. Internal to the plan layer.
#pragma once

#include "redist/plan.hpp"

namespace redist::detail {

// Fills `plan` (sends, receives, locals and their statistics) and returns true
// when both layouts are block-cyclic over regular partitions (any region,
// permuted dimensions too: Region::axes); returns false,
// leaving `plan` as it was, otherwise. Same preconditions as plan_rank.
// `every_pair`: the walk before 2026-11-26, for the tests to compare with: the
// 1-D lists of every coordinate of the other side's grid (not only those that
// share a piece with this rank), each walking every block of its outer side (no
// jumps over blocks that meet nothing). The planner leaves it false.
bool plan_compressed(const Layout& src, const Layout& dst, const LocalIndex& src_local, const LocalIndex& dst_local,
                     const Region& region, int rank, int nranks, RankPlan& plan, bool every_pair = false);

// Orders a rank's peers by distance: (peer - rank) mod nranks on the send side,
// (rank - peer) mod nranks on the receive side, so that in round k of an exchange
// every rank sends to rank + k and receives from rank - k.
void order_by_distance(std::vector<PeerPlan>& peers, int rank, int nranks, bool send_side);

// The least j >= 0 with (a j + b) mod m <= h, or -1 when there is none
// (0 <= a, b; 0 <= h < m; m > 0). pair_list jumps with it from one block of a
// coordinate that meets the other side's coordinate to the next, over the
// blocks between that meet nothing, in O(log m).
index_t first_in_window(index_t a, index_t b, index_t m, index_t h);

// The uncompressed planner: one entry per segment (count 1), for any layouts;
// paper 000's Algorithm 1. plan_rank uses it where plan_compressed does not
// apply; the tests use it as the oracle of the compressed plans.
RankPlan plan_segment_list(const Layout& src, const Layout& dst, const LocalIndex& src_local,
                           const LocalIndex& dst_local, const Region& region, int rank, int nranks);

}  // namespace redist::detail
