// Aggregation per node pair (issue 14 item 3), pure functions without MPI.
// Ranks are grouped in nodes; what a rank of node A sends to ranks of another
// node B travels in three steps: to A's lane for B (on A), one message from that
// lane to B's lane for A (on B), then to its target. The lane of node A for node
// B is A's member number d mod |A|, d = (B - A - 1) mod nodes (B's distance
// among the other nodes): the node pairs of a node are spread evenly over its
// ranks, so every rank of a node drives at most ceil((nodes-1)/|A|) of them;
// between two nodes exactly one message travels each way, however many of
// their rank pairs exchange data. Blocks within a node go directly.
//
// The `aggregate` strategy routes by these rules (exec/strategies/aggregate.cpp);
// `redist plan --ranks P --ranks-per-node K` counts the messages and volume of a
// node with and without them (node_traffic).
#pragma once

#include <vector>

#include "redist/geometry.hpp"
#include "redist/plan.hpp"

namespace redist::nodes {

struct NodeMap {
  std::vector<int> node;                  // rank -> its node (0 .. nodes-1)
  std::vector<std::vector<int>> members;  // node -> its ranks, ascending

  int size() const { return static_cast<int>(members.size()); }
  // The rank of node `from` that carries its traffic with node `to` (from != to).
  int lane(int from, int to) const {
    const std::vector<int>& m = members[static_cast<size_t>(from)];
    const int distance = (to - from - 1 + size()) % size();  // 0 .. nodes-2 over the other nodes
    return m[static_cast<size_t>(distance) % m.size()];
  }
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
