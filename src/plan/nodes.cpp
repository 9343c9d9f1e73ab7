// Aggregation per node pair (nodes.hpp): the lane rule and a node's traffic.
#include "plan/nodes.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace redist::nodes {

int NodeMap::holder(int src, int dst, int step) const {
  const int a = node[static_cast<size_t>(src)], b = node[static_cast<size_t>(dst)];
  if (a == b || step >= 3) return dst;
  return step == 1 ? lane(a, b) : lane(b, a);
}

NodeMap consecutive(int ranks, int per_node) {
  std::vector<int> leader(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) leader[static_cast<size_t>(r)] = r - r % per_node;
  return from_leaders(leader);
}

NodeMap from_leaders(const std::vector<int>& leader) {
  NodeMap m;
  m.node.resize(leader.size());
  std::map<int, int> number;  // leader -> node, in the order of the nodes' first ranks
  for (size_t r = 0; r < leader.size(); ++r) {
    const auto [it, fresh] = number.try_emplace(leader[r], m.size());
    if (fresh) m.members.emplace_back();
    m.node[r] = it->second;
    m.members[static_cast<size_t>(it->second)].push_back(static_cast<int>(r));
  }
  return m;
}

NodeTraffic node_traffic(const NodeMap& map, int node, const std::vector<RankPlan>& plans) {
  const std::vector<int>& members = map.members[static_cast<size_t>(node)];
  NodeTraffic t;
  t.ranks = static_cast<index_t>(members.size());
  // Per member and step, the peers it sends to / receives from (one message each).
  struct Peers {
    std::set<int> out[3], in[3];
  };
  std::map<int, Peers> at;
  std::set<int> to_nodes, from_nodes;
  auto on = [&](int r) { return map.node[static_cast<size_t>(r)] == node; };
  for (size_t i = 0; i < members.size(); ++i) {
    const int r = members[i];
    const RankPlan& rp = plans[i];
    t.direct_rank_max = std::max<index_t>(t.direct_rank_max, static_cast<index_t>(rp.sends.size() + rp.receives.size()));
    for (const PeerPlan& q : rp.sends) {
      if (on(q.peer)) {  // within the node: directly, in step 1
        t.on_node_bytes += q.bytes;
        at[r].out[0].insert(q.peer), at[q.peer].in[0].insert(r);
        continue;
      }
      const int b = map.node[static_cast<size_t>(q.peer)], l = map.lane(node, b);
      t.out_bytes += q.bytes, ++t.direct_out;
      to_nodes.insert(b);
      if (l != r) at[r].out[0].insert(l), at[l].in[0].insert(r), t.forwarded_bytes += q.bytes;
      at[l].out[1].insert(map.lane(b, node));
    }
    for (const PeerPlan& q : rp.receives) {
      if (on(q.peer)) continue;  // counted by its sender above
      const int b = map.node[static_cast<size_t>(q.peer)], l = map.lane(node, b);
      t.in_bytes += q.bytes, ++t.direct_in;
      from_nodes.insert(b);
      at[l].in[1].insert(map.lane(b, node));
      if (l != r) at[l].out[2].insert(r), at[r].in[2].insert(l), t.forwarded_bytes += q.bytes;
    }
  }
  t.aggregated_out = static_cast<index_t>(to_nodes.size());
  t.aggregated_in = static_cast<index_t>(from_nodes.size());
  for (const auto& [r, p] : at) {
    index_t n = 0;
    for (int s = 0; s < 3; ++s) n += static_cast<index_t>(p.out[s].size() + p.in[s].size());
    t.aggregated_rank_max = std::max(t.aggregated_rank_max, n);
  }
  return t;
}

}  // namespace redist::nodes
