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
  // Per rank and step (0..2), the peers it sends to / receives from: one message
  // per pair and step, however many blocks it carries.
  struct Peers {
    std::set<int> out[3], in[3];
    index_t bytes_off = 0, bytes_on = 0;
  };
  std::map<int, Peers> at;
  std::set<int> to_nodes, from_nodes;
  auto on = [&](int r) { return map.node[static_cast<size_t>(r)] == node; };
  // A block moved between two ranks of this node in a step, or between a lane of
  // this node and a lane of another (step 1 of 0..2: only `from` is here, or only `to`).
  auto hop = [&](int step, int from, int to, index_t n) {
    if (from == to) return;
    const bool local = on(from) && on(to);
    if (on(from)) at[from].out[step].insert(to), (local ? at[from].bytes_on : at[from].bytes_off) += n;
    if (on(to)) at[to].in[step].insert(from), (local ? at[to].bytes_on : at[to].bytes_off) += n;
  };
  for (size_t i = 0; i < members.size(); ++i) {
    const int r = members[i];
    const RankPlan& rp = plans[i];
    RankLoad d;
    for (const std::vector<PeerPlan>* side : {&rp.sends, &rp.receives})
      for (const PeerPlan& q : *side)
        (on(q.peer) ? d.messages_on : d.messages_off) += 1, (on(q.peer) ? d.bytes_on : d.bytes_off) += q.bytes;
    t.direct.push_back(d);
    for (const PeerPlan& q : rp.sends) {
      if (on(q.peer)) {  // within the node: directly, in step 1
        t.on_node_bytes += q.bytes;
        hop(0, r, q.peer, q.bytes);
        continue;
      }
      const int b = map.node[static_cast<size_t>(q.peer)], l = map.lane(node, b);
      t.out_bytes += q.bytes, ++t.direct_out;
      to_nodes.insert(b);
      if (l != r) t.forwarded_bytes += q.bytes;
      hop(0, r, l, q.bytes);
      hop(1, l, map.lane(b, node), q.bytes);
    }
    for (const PeerPlan& q : rp.receives) {
      if (on(q.peer)) continue;  // counted by its sender above
      const int b = map.node[static_cast<size_t>(q.peer)], l = map.lane(node, b);
      t.in_bytes += q.bytes, ++t.direct_in;
      from_nodes.insert(b);
      if (l != r) t.forwarded_bytes += q.bytes;
      hop(1, map.lane(b, node), l, q.bytes);
      hop(2, l, r, q.bytes);
    }
  }
  t.aggregated_out = static_cast<index_t>(to_nodes.size());
  t.aggregated_in = static_cast<index_t>(from_nodes.size());
  for (const int r : members) {
    const Peers& p = at[r];
    RankLoad a;
    for (int s = 0; s < 3; ++s)
      for (const std::set<int>* side : {&p.out[s], &p.in[s]})
        for (const int q : *side) (on(q) ? a.messages_on : a.messages_off) += 1;
    a.bytes_on = p.bytes_on, a.bytes_off = p.bytes_off;
    t.aggregated.push_back(a);
  }
  return t;
}

}  // namespace redist::nodes
