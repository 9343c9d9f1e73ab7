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
  lane_rank.clear(), slot.clear();
  for (size_t a = 0; a < members.size(); ++a) peers[a].assign(with[a].begin(), with[a].end());
  first_lane.assign(members.size(), {});
  for (size_t a = 0; a < members.size(); ++a) {
    int next = 0;
    for (const int b : peers[a]) first_lane[a].push_back(next), next += lanes(static_cast<int>(a), b);
  }
}

void NodeMap::set_flows(const std::vector<Flow>& flows) {
  const size_t n = members.size();
  std::map<std::pair<int, int>, index_t> volume;  // (a, b), a < b: bytes both ways
  std::map<std::pair<int, int>, index_t> out;     // (rank, other node): its bytes to that node
  std::map<std::pair<int, int>, index_t> with;    // (rank, other node): its bytes with it, both ways
  std::vector<index_t> own(node.size(), 0);       // rank: its bytes with other nodes
  for (const Flow& f : flows) {
    const int a = node[static_cast<size_t>(f.src)], b = node[static_cast<size_t>(f.dst)];
    if (a == b) continue;
    volume[{std::min(a, b), std::max(a, b)}] += f.bytes;
    out[{f.src, b}] += f.bytes;
    with[{f.src, b}] += f.bytes, with[{f.dst, a}] += f.bytes;
    own[static_cast<size_t>(f.src)] += f.bytes, own[static_cast<size_t>(f.dst)] += f.bytes;
  }
  peers.assign(n, {});
  for (const auto& [ab, v] : volume) peers[static_cast<size_t>(ab.first)].push_back(ab.second),
                                     peers[static_cast<size_t>(ab.second)].push_back(ab.first);
  for (auto& p : peers) std::sort(p.begin(), p.end());
  const auto vol = [&](int a, int b) { return volume.at({std::min(a, b), std::max(a, b)}); };
  // Each node's wish: one lane per peer, its other ranks to the most bytes per lane.
  std::vector<std::vector<int>> want(n);
  for (size_t a = 0; a < n; ++a) {
    const auto& pa = peers[a];
    want[a].assign(pa.size(), 1);
    const size_t k = members[a].size();
    for (size_t extra = k > pa.size() && !pa.empty() ? k - pa.size() : 0; extra > 0; --extra) {
      size_t best = 0;
      for (size_t i = 1; i < pa.size(); ++i)  // V_i / c_i > V_best / c_best, in integers
        if (static_cast<double>(vol(static_cast<int>(a), pa[i])) * want[a][best] >
            static_cast<double>(vol(static_cast<int>(a), pa[best])) * want[a][i])
          best = i;
      ++want[a][best];
    }
  }
  first_lane.assign(n, {});
  lane_rank.assign(n, {});
  for (size_t a = 0; a < n; ++a) {
    const auto& pa = peers[a];
    const std::vector<int>& m = members[a];
    std::vector<int> count(pa.size());
    size_t total = 0;
    for (size_t i = 0; i < pa.size(); ++i) {
      const size_t b = static_cast<size_t>(pa[i]);
      const size_t back = static_cast<size_t>(std::lower_bound(peers[b].begin(), peers[b].end(), static_cast<int>(a)) -
                                              peers[b].begin());
      count[i] = std::min(want[a][i], want[b][back]);
      first_lane[a].push_back(static_cast<int>(total));
      total += static_cast<size_t>(count[i]);
    }
    // The lanes, heaviest pair first (bytes per lane), each to the member that
    // exchanges the most bytes with that node itself (so it carries its own),
    // then the one with the fewest bytes so far; members once each while the
    // lanes are at most the members.
    std::vector<size_t> order(pa.size());
    for (size_t i = 0; i < pa.size(); ++i) order[i] = i;
    const auto per_lane = [&](size_t i) { return static_cast<double>(vol(static_cast<int>(a), pa[i])) / count[i]; };
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return per_lane(x) > per_lane(y); });
    std::vector<double> load(m.size());
    for (size_t r = 0; r < m.size(); ++r) load[r] = static_cast<double>(own[static_cast<size_t>(m[r])]);
    std::vector<char> used(m.size(), 0);
    lane_rank[a].resize(pa.size());
    size_t taken = 0;
    for (const size_t i : order) {
      for (int j = 0; j < count[i]; ++j) {
        if (taken == m.size()) std::fill(used.begin(), used.end(), 0), taken = 0;  // every member once: again
        size_t best = m.size();
        index_t best_with = -1;
        for (size_t r = 0; r < m.size(); ++r) {
          if (used[r]) continue;
          const auto w = with.find({m[r], pa[i]});
          const index_t x = w == with.end() ? 0 : w->second;
          if (best == m.size() || x > best_with || (x == best_with && load[r] < load[best])) best = r, best_with = x;
        }
        used[best] = 1, ++taken;
        load[best] += 2 * per_lane(i);  // in and out
        lane_rank[a][i].push_back(m[best]);
      }
    }
  }
  // The flows of each node pair (both ways), largest first, each to its lane with the fewest bytes.
  std::map<std::pair<int, int>, std::vector<std::pair<index_t, int>>> pair_flows;  // (a<b) -> (bytes, rank)
  for (const auto& [key, bytes] : out) {
    const int a = node[static_cast<size_t>(key.first)], b = key.second;
    pair_flows[{std::min(a, b), std::max(a, b)}].push_back({bytes, key.first});
  }
  // A rank that is itself a lane for the other node carries its own flow; the
  // others, largest first, go to the lane with the fewest bytes so far.
  slot.assign(node.size(), {});
  for (auto& [ab, fl] : pair_flows) {
    std::stable_sort(fl.begin(), fl.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    const int c = lanes(ab.first, ab.second);
    std::vector<index_t> lane_load(static_cast<size_t>(c), 0);
    std::vector<char> done(fl.size(), 0);
    for (size_t f = 0; f < fl.size(); ++f) {
      const int r = fl[f].second, from = node[static_cast<size_t>(r)], other = from == ab.first ? ab.second : ab.first;
      for (int j = 0; j < c && !done[f]; ++j)
        if (lane(from, other, j) == r) {
          lane_load[static_cast<size_t>(j)] += fl[f].first, done[f] = 1;
          slot[static_cast<size_t>(r)].push_back({other, j});
        }
    }
    for (size_t f = 0; f < fl.size(); ++f) {
      if (done[f]) continue;
      const int r = fl[f].second, other = node[static_cast<size_t>(r)] == ab.first ? ab.second : ab.first;
      const size_t j = static_cast<size_t>(std::min_element(lane_load.begin(), lane_load.end()) - lane_load.begin());
      lane_load[j] += fl[f].first;
      slot[static_cast<size_t>(r)].push_back({other, static_cast<int>(j)});
    }
  }
  for (auto& s : slot) std::sort(s.begin(), s.end());
}

int NodeMap::peer_index(int a, int b) const {
  if (peers.empty()) return -1;
  const auto& pa = peers[static_cast<size_t>(a)];
  const auto it = std::lower_bound(pa.begin(), pa.end(), b);
  return it != pa.end() && *it == b ? static_cast<int>(it - pa.begin()) : -1;
}

int NodeMap::lanes(int a, int b) const {
  const int i = peer_index(a, b);
  if (i < 0) return 1;  // no data between them (or no pairs set)
  if (!lane_rank.empty()) return static_cast<int>(lane_rank[static_cast<size_t>(a)][static_cast<size_t>(i)].size());
  const auto& pa = peers[static_cast<size_t>(a)];
  const auto& pb = peers[static_cast<size_t>(b)];
  const size_t ka = members[static_cast<size_t>(a)].size(), kb = members[static_cast<size_t>(b)].size();
  return static_cast<int>(std::max<size_t>(1, std::min(ka / pa.size(), kb / pb.size())));
}

int NodeMap::lane(int from, int to, int j) const {
  const std::vector<int>& m = members[static_cast<size_t>(from)];
  if (const int i = peer_index(from, to); i >= 0) {
    if (!lane_rank.empty()) {
      const auto& l = lane_rank[static_cast<size_t>(from)][static_cast<size_t>(i)];
      return l[static_cast<size_t>(j) % l.size()];
    }
    const int first = first_lane[static_cast<size_t>(from)][static_cast<size_t>(i)];
    return m[static_cast<size_t>(first + j) % m.size()];
  }
  const int distance = (to - from - 1 + size()) % size();  // 0 .. nodes-2 over the other nodes
  return m[static_cast<size_t>(distance + j) % m.size()];
}

int NodeMap::holder(int src, int dst, int step) const {
  const int a = node[static_cast<size_t>(src)], b = node[static_cast<size_t>(dst)];
  if (a == b || step >= 3) return dst;
  int j = -1;
  if (!slot.empty()) {  // set_flows: the lane its flow to b was given
    const auto& s = slot[static_cast<size_t>(src)];
    const auto it = std::lower_bound(s.begin(), s.end(), std::pair<int, int>{b, -1});
    if (it != s.end() && it->first == b) j = it->second;
  }
  if (j < 0) j = index[static_cast<size_t>(src)] % lanes(a, b);
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
