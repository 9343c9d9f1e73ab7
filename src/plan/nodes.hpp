// Aggregation per node pair (issue 14 item 3), pure functions without MPI.
// Ranks are grouped in nodes; what a rank of node A sends to ranks of another
// node B travels in three steps: to one of A's lanes for B (a rank of A), in one
// message from that lane to the matching lane of B for A, then to its target.
// Blocks within a node go directly (step 1).
//
// Lanes. Once the node pairs that exchange data are known (set_pairs), node A
// gives each of its P_A peer nodes c = min(K_A / P_A, K_B / P_B) lanes (at least
// 1; K: the node's ranks), distinct ranks while c * P_A <= K_A, so that all of a
// node's ranks carry its traffic when it has few peer nodes: a node pair
// exchanges c messages each way, instead of up to K_A * K_B. A rank's blocks to
// B take lane (its number on A) mod c. Without set_pairs every node pair has one
// lane: A's member (B - A - 1) mod nodes, mod K_A.
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

struct NodeMap {
  std::vector<int> node;                  // rank -> its node (0 .. nodes-1)
  std::vector<int> index;                 // rank -> its number among its node's members
  std::vector<std::vector<int>> members;  // node -> its ranks, ascending
  // After set_pairs: node -> the nodes it exchanges data with (either way),
  // ascending, and where its lanes for each begin among its members.
  std::vector<std::vector<int>> peers, first_lane;

  int size() const { return static_cast<int>(members.size()); }
  // Ordered node pairs (a, b), a != b, between which data moves (any order,
  // repeats allowed): the lanes of every node.
  void set_pairs(const std::vector<std::pair<int, int>>& pairs);
  // Lanes between nodes a and b (a != b), and lane j of node `from` for node `to`.
  int lanes(int a, int b) const;
  int lane(int from, int to, int j) const;
  // Where a block sent by `src` to `dst` is after step 1, 2 and 3 (its target).
  int holder(int src, int dst, int step) const;
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
