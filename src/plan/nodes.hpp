// Aggregation per node pair (issue 14 item 3), pure functions without MPI.
// Ranks are grouped in nodes; what a rank of node A sends to ranks of another
// node B travels in three steps: to one of A's lanes for B (a rank of A), in one
// message from that lane to the matching lane of B for A, then to its target.
// Blocks within a node go directly (step 1).
//
// Lanes by count (set_pairs, the first rule; kept to compare). Once the node
// pairs that exchange data are known, node A
// gives each of its P_A peer nodes c = min(K_A / P_A, K_B / P_B) lanes (at least
// 1; K: the node's ranks), distinct ranks while c * P_A <= K_A, so that all of a
// node's ranks carry its traffic when it has few peer nodes: a node pair
// exchanges c messages each way, instead of up to K_A * K_B. A rank's blocks to
// B take lane (its number on A) mod c. Without set_pairs every node pair has one
// lane: A's member (B - A - 1) mod nodes, mod K_A.
//
// Lanes by volume (set_flows, what `aggregate` and `redist plan --ranks-per-node`
// use): a node pair's lanes, which ranks they are and which lane each rank's
// bytes take follow the bytes of the node pairs and ranks (NodeMap::set_flows):
// with the count rule a pair that carries more bytes loaded its lanes more
// (docs/shm.md, "Aggregation per node pair").
//
// The `aggregate` strategy routes by these rules (exec/strategies/aggregate.cpp);
// `redist plan --ranks P --ranks-per-node K` counts the messages and volume of a
// node with and without them (node_traffic).
#pragma once

#include <utility>
#include <vector>

#include "redist/geometry.hpp"
#include "redist/plan.hpp"

namespace redist::nodes {

// Bytes rank `src` sends to rank `dst` (set_flows).
struct Flow {
  int src, dst;
  index_t bytes;
};

struct NodeMap {
  std::vector<int> node;                  // rank -> its node (0 .. nodes-1)
  std::vector<int> index;                 // rank -> its number among its node's members
  std::vector<std::vector<int>> members;  // node -> its ranks, ascending
  // After set_pairs or set_flows: node -> the nodes it exchanges data with
  // (either way), ascending, and where its lanes for each begin among its members.
  std::vector<std::vector<int>> peers, first_lane;
  // After set_flows: node -> per peer (peers' order) its lanes' ranks, lane j at
  // [j]; rank -> (other node, lane number) of its flows to that node, by node.
  std::vector<std::vector<std::vector<int>>> lane_rank;
  std::vector<std::vector<std::pair<int, int>>> slot;

  int size() const { return static_cast<int>(members.size()); }
  // Ordered node pairs (a, b), a != b, between which data moves (any order,
  // repeats allowed): the lanes of every node, by the count of node pairs (above).
  void set_pairs(const std::vector<std::pair<int, int>>& pairs);
  // The lanes by volume (what `aggregate` and `redist plan --ranks-per-node` use),
  // from every rank pair's bytes (flows within a node are ignored). V(a,b): the
  // bytes between nodes a and b, both ways.
  //  - Lanes per node pair: node a gives each peer node one lane, then its other
  //    K_a - P_a ranks one at a time to the peer with the most bytes per lane
  //    (V(a,b) / lanes so far); the pair gets the smaller of its two nodes'
  //    counts, c(a,b) = c(b,a) >= 1. So a node's lanes are at most its ranks
  //    when P_a <= K_a, and a pair carrying more bytes has more of them.
  //  - Which ranks: the lanes of a node, heaviest first (V(a,b) / c(a,b) each),
  //    each to the member that exchanges the most bytes with that other node
  //    itself, then to the one with the fewest bytes so far (its own bytes with
  //    other nodes to start with, then the lanes it got), a member at most once
  //    while the lanes are at most the members.
  //  - Which lane a rank's bytes take: the flows of a node pair (rank -> other
  //    node, both ways), largest first, each to the lane with the fewest bytes
  //    so far; a lane j of a and lane j of b carry the same flows.
  void set_flows(const std::vector<Flow>& flows);
  // Lanes between nodes a and b (a != b), and lane j of node `from` for node `to`.
  int lanes(int a, int b) const;
  int lane(int from, int to, int j) const;
  // Where a block sent by `src` to `dst` is after step 1, 2 and 3 (its target).
  int holder(int src, int dst, int step) const;

 private:
  int peer_index(int a, int b) const;  // b's place in peers[a], -1 when absent
};

// `ranks` ranks in nodes of `per_node` consecutive ranks (the last may be smaller).
NodeMap consecutive(int ranks, int per_node);
// From each rank's node leader (any rank id naming its node, the same for all
// its members): nodes numbered in the order of their first rank.
NodeMap from_leaders(const std::vector<int>& leader);

// A node's traffic for one redistribution: its ranks' plans (every member's,
// from plan_rank), without aggregation (every rank pair its message) and with it
// (through the lanes above). Volumes in bytes; a message counts on both ranks.
struct RankLoad {
  index_t messages_off = 0, bytes_off = 0;  // with ranks of other nodes
  index_t messages_on = 0, bytes_on = 0;    // with ranks of this node
};
struct NodeTraffic {
  index_t out_bytes = 0, in_bytes = 0;  // to / from other nodes (the same both ways)
  index_t on_node_bytes = 0;            // between two ranks of this node (not forwarded)
  // Messages leaving / entering the node: without aggregation one per rank
  // pair; with it one per node pair and direction.
  index_t direct_out = 0, direct_in = 0, aggregated_out = 0, aggregated_in = 0;
  // With aggregation, the bytes forwarded on the node (steps 1 and 3: to or from
  // a lane that is not the block's own rank).
  index_t forwarded_bytes = 0;
  // Per member (members' order): what it sends and receives, in all three steps
  // with aggregation.
  std::vector<RankLoad> direct, aggregated;
};
// `plans[i]` is the plan of rank `map.members[node][i]`.
NodeTraffic node_traffic(const NodeMap& map, int node, const std::vector<RankPlan>& plans);

}  // namespace redist::nodes
