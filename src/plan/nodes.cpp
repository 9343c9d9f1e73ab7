// Aggregation per node pair (nodes.hpp): the lane rule and a node's traffic.
#include "plan/nodes.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace redist::nodes {

void NodeMap::set_pairs(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::set<int>> with(members.size());
  for (const auto& [a, b] : pairs)
    if (a != b) with[static_cast<size_t>(a)].insert(b), with[static_cast<size_t>(b)].insert(a);
  peers.assign(members.size(), {});
  for (size_t a = 0; a < members.size(); ++a) peers[a].assign(with[a].begin(), with[a].end());
  first_lane.assign(members.size(), {});
  for (size_t a = 0; a < members.size(); ++a) {
    int next = 0;
    for (const int b : peers[a]) first_lane[a].push_back(next), next += lanes(static_cast<int>(a), b);
  }
}

int NodeMap::lanes(int a, int b) const {
  if (peers.empty()) return 1;
  const auto& pa = peers[static_cast<size_t>(a)];
  const auto& pb = peers[static_cast<size_t>(b)];
  if (!std::binary_search(pa.begin(), pa.end(), b)) return 1;  // no data between them
  const size_t ka = members[static_cast<size_t>(a)].size(), kb = members[static_cast<size_t>(b)].size();
  return static_cast<int>(std::max<size_t>(1, std::min(ka / pa.size(), kb / pb.size())));
}

int NodeMap::lane(int from, int to, int j) const {
  const std::vector<int>& m = members[static_cast<size_t>(from)];
  if (!peers.empty()) {
    const auto& p = peers[static_cast<size_t>(from)];
    const auto it = std::lower_bound(p.begin(), p.end(), to);
    if (it != p.end() && *it == to) {
      const int first = first_lane[static_cast<size_t>(from)][static_cast<size_t>(it - p.begin())];
      return m[static_cast<size_t>(first + j) % m.size()];
    }
  }
  const int distance = (to - from - 1 + size()) % size();  // 0 .. nodes-2 over the other nodes
  return m[static_cast<size_t>(distance + j) % m.size()];
}

int NodeMap::holder(int src, int dst, int step) const {
  const int a = node[static_cast<size_t>(src)], b = node[static_cast<size_t>(dst)];
  if (a == b || step >= 3) return dst;
  const int j = index[static_cast<size_t>(src)] % lanes(a, b);
  return step == 1 ? lane(a, b, j) : lane(b, a, j);
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
    std::vector<int>& mine = m.members[static_cast<size_t>(it->second)];
    m.index.push_back(static_cast<int>(mine.size()));
    mine.push_back(static_cast<int>(r));
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
  index_t forwarded = 0;
  auto on = [&](int r) { return map.node[static_cast<size_t>(r)] == node; };
  // A block moved between two ranks in a step (0..2), one of them or both here.
  auto hop = [&](int step, int from, int to, index_t n) {
    if (from == to) return;
    const bool local = on(from) && on(to);
    if (on(from)) at[from].out[step].insert(to), (local ? at[from].bytes_on : at[from].bytes_off) += n;
    if (on(to)) at[to].in[step].insert(from), (local ? at[to].bytes_on : at[to].bytes_off) += n;
  };
  // A block's three steps, as far as they touch this node.
  auto route = [&](int src, int dst, index_t n) {
    int at_rank = src;
    for (int step = 1; step <= 3; ++step) {
      const int next = map.holder(src, dst, step);
      if (next != at_rank && (on(at_rank) || on(next))) {
        hop(step - 1, at_rank, next, n);
        if (step != 2 && on(at_rank) && map.node[static_cast<size_t>(src)] != map.node[static_cast<size_t>(dst)])
          forwarded += n;  // to or from a lane on this node
      }
      at_rank = next;
    }
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
      if (on(q.peer)) {
        t.on_node_bytes += q.bytes;
      } else {
        t.out_bytes += q.bytes, ++t.direct_out;
      }
      route(r, q.peer, q.bytes);
    }
    for (const PeerPlan& q : rp.receives) {
      if (on(q.peer)) continue;  // routed by its sender above
      t.in_bytes += q.bytes, ++t.direct_in;
      route(q.peer, r, q.bytes);
    }
  }
  t.forwarded_bytes = forwarded;
  for (const int r : members) {
    const Peers& p = at[r];
    RankLoad a;
    for (int s = 0; s < 3; ++s)
      for (const std::set<int>* side : {&p.out[s], &p.in[s]})
        for (const int q : *side) (on(q) ? a.messages_on : a.messages_off) += 1;
    a.bytes_on = p.bytes_on, a.bytes_off = p.bytes_off;
    t.aggregated.push_back(a);
    // Step 2's messages are the ones between nodes: out of and into this node.
    t.aggregated_out += static_cast<index_t>(p.out[1].size());
    t.aggregated_in += static_cast<index_t>(p.in[1].size());
  }
  return t;
}

}  // namespace redist::nodes
