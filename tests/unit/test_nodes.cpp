// Aggregation per node pair (src/plan/nodes.hpp), without MPI: the lane rule's
// properties on random node maps, and a node's traffic (node_traffic) against a
// brute-force count of the relay's messages: every block's holders step by step,
// one message per (step, holder, next holder) as the relay engine sends them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "../common/random_layout.hpp"
#include "plan/nodes.hpp"

using namespace redist;
using redist::testing::Rng;
using redist::testing::uniform;

namespace {

// Ranks in nodes of random sizes, the ranks of a node not consecutive.
nodes::NodeMap random_map(Rng& rng, int ranks) {
  const int n = static_cast<int>(uniform(rng, 1, ranks));
  std::vector<int> leader(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) leader[static_cast<size_t>(r)] = r < n ? r : static_cast<int>(uniform(rng, 0, n - 1));
  return nodes::from_leaders(leader);
}

// A block from rank s to rank d takes three steps: holders 1 and 2 are d itself
// on one node, else a rank of s's node then a rank of d's node; holder 3 is d.
::testing::AssertionResult routed(const nodes::NodeMap& m, int s, int d) {
  const int h1 = m.holder(s, d, 1), h2 = m.holder(s, d, 2), h3 = m.holder(s, d, 3);
  const int a = m.node[s], b = m.node[d];
  if (h3 != d) return ::testing::AssertionFailure() << s << " -> " << d << ": holder 3 is " << h3;
  if (a == b && (h1 != d || h2 != d))
    return ::testing::AssertionFailure() << s << " -> " << d << " on one node: holders " << h1 << ", " << h2;
  if (a != b && (m.node[h1] != a || m.node[h2] != b))
    return ::testing::AssertionFailure() << s << " -> " << d << ": holders " << h1 << ", " << h2
                                         << " on nodes " << m.node[h1] << ", " << m.node[h2];
  return ::testing::AssertionSuccess();
}

TEST(Nodes, ConsecutiveAndLeaders) {
  const nodes::NodeMap m = nodes::consecutive(7, 3);
  ASSERT_EQ(m.size(), 3);
  EXPECT_EQ(m.members[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.members[2], (std::vector<int>{6}));
  EXPECT_EQ(m.node, (std::vector<int>{0, 0, 0, 1, 1, 1, 2}));
  const nodes::NodeMap l = nodes::from_leaders({5, 2, 5, 2, 9});
  EXPECT_EQ(l.node, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(l.members[1], (std::vector<int>{1, 3}));
  EXPECT_EQ(l.index, (std::vector<int>{0, 0, 1, 1, 0}));
}

// Random ordered node pairs with data (each with probability `density`).
std::vector<std::pair<int, int>> random_pairs(Rng& rng, int nodes, int density_percent) {
  std::vector<std::pair<int, int>> v;
  for (int a = 0; a < nodes; ++a)
    for (int b = 0; b < nodes; ++b)
      if (a != b && static_cast<int>(uniform(rng, 0, 99)) < density_percent) v.push_back({a, b});
  return v;
}

// Every block reaches its target in three steps through a lane on each node;
// within a node, directly. Without pairs: one lane per node pair, the same for
// all its rank pairs (one message each way), a node's other nodes spread over
// its members (at most ceil(others / members) each). With pairs: node pair (a,b)
// has lanes(a,b) = max(1, min(K_a / P_a, K_b / P_b)) lane pairs, all of them used;
// a node's lanes for different nodes are different ranks when it has at most as
// many peer nodes as ranks, else each rank serves at most ceil(P_a / K_a) pairs.
TEST(Nodes, LanesOnRandomMaps) {
  Rng rng(14);
  for (int c = 0; c < 400; ++c) {
    const int P = static_cast<int>(uniform(rng, 1, 40));
    nodes::NodeMap m = random_map(rng, P);
    const bool with_pairs = c % 2 == 1;
    std::vector<std::pair<int, int>> data;
    if (with_pairs) m.set_pairs(data = random_pairs(rng, m.size(), static_cast<int>(uniform(rng, 5, 100))));
    std::vector<std::set<int>> peers(static_cast<size_t>(m.size()));
    for (const auto& [a, b] : data) peers[a].insert(b), peers[b].insert(a);
    std::map<std::pair<int, int>, std::set<std::pair<int, int>>> pair_lanes;
    for (int s = 0; s < P; ++s)
      for (int d = 0; d < P; ++d) {
        const int a = m.node[s], b = m.node[d];
        const int h1 = m.holder(s, d, 1), h2 = m.holder(s, d, 2);
        ASSERT_TRUE(routed(m, s, d)) << c;
        if (a == b) continue;
        pair_lanes[{a, b}].insert({h1, h2});
      }
    for (int a = 0; a < m.size(); ++a) {
      const int k = static_cast<int>(m.members[a].size());
      std::map<int, int> load;  // rank of a -> node pairs it serves
      for (int b = 0; b < m.size(); ++b) {
        if (b == a) continue;
        const auto& lanes = pair_lanes[{a, b}];
        const bool has = peers[a].count(b) > 0;
        size_t want = 1;
        if (with_pairs && has)
          want = static_cast<size_t>(std::max<size_t>(
              1, std::min(m.members[a].size() / peers[a].size(), m.members[b].size() / peers[b].size())));
        ASSERT_EQ(lanes.size(), want) << "case " << c << " node pair " << a << "->" << b;
        ASSERT_EQ(m.lanes(a, b), static_cast<int>(want));
        ASSERT_EQ(m.lanes(b, a), static_cast<int>(want));
        if (!with_pairs || has)
          for (const auto& [h1, h2] : lanes) ++load[h1];
      }
      const int others = with_pairs ? static_cast<int>(peers[a].size()) : m.size() - 1;
      for (const auto& [r, n] : load) {
        if (with_pairs && others <= k) {
          ASSERT_EQ(n, 1) << "case " << c << ": rank " << r << " is a lane twice";
        }
        if (!with_pairs) {
          ASSERT_LE(n, (others + k - 1) / k) << c;
        }
      }
    }
  }
}

// node_traffic against the brute force: plans of every rank of generator cases,
// the relay's messages derived from holders alone.
TEST(Nodes, TrafficAgainstBruteForce) {
  Rng rng(1414);
  for (int c = 0; c < 300; ++c) {
    const int P = static_cast<int>(uniform(rng, 1, 9));
    const auto [src, dst, region] = redist::testing::random_case(rng, P);
    nodes::NodeMap m = uniform(rng, 0, 1) ? random_map(rng, P)
                                          : nodes::consecutive(P, static_cast<int>(uniform(rng, 1, P)));
    std::vector<RankPlan> plans;
    for (int r = 0; r < P; ++r) plans.push_back(plan_rank(src, dst, region, r, P));
    if (c % 3 == 1) {  // the lanes from the node pairs that exchange data (by count)
      std::vector<std::pair<int, int>> pairs;
      for (int r = 0; r < P; ++r)
        for (const PeerPlan& q : plans[r].sends) pairs.push_back({m.node[r], m.node[q.peer]});
      m.set_pairs(pairs);
    } else if (c % 3 == 2) {  // by volume, as `aggregate` sets them
      std::vector<nodes::Flow> flows;
      for (int r = 0; r < P; ++r)
        for (const PeerPlan& q : plans[r].sends) flows.push_back({r, q.peer, q.bytes});
      m.set_flows(flows);
    }
    std::map<std::tuple<int, int, int>, index_t> messages;  // (step, from, to) -> bytes
    std::map<int, index_t> forwarded;  // node -> bytes in steps 1 and 3 through a lane not the block's rank
    for (int s = 0; s < P; ++s)
      for (const PeerPlan& q : plans[s].sends) {
        int at = s;
        for (int step = 1; step <= 3; ++step) {
          const int next = m.holder(s, q.peer, step);
          if (next != at) messages[{step, at, next}] += q.bytes;
          if (step != 2 && next != at && m.node[s] != m.node[q.peer]) forwarded[m.node[at]] += q.bytes;
          at = next;
        }
      }
    for (int n = 0; n < m.size(); ++n) {
      std::vector<RankPlan> mine;
      for (int r : m.members[n]) mine.push_back(plans[r]);
      const nodes::NodeTraffic t = nodes::node_traffic(m, n, mine);
      const std::string what = "case " + std::to_string(c) + " node " + std::to_string(n);
      index_t out = 0, in = 0, direct_out = 0, direct_in = 0;
      ASSERT_EQ(t.direct.size(), m.members[n].size());
      ASSERT_EQ(t.aggregated.size(), m.members[n].size());
      for (size_t i = 0; i < m.members[n].size(); ++i) {
        const int r = m.members[n][i];
        nodes::RankLoad d, a;
        for (const auto* side : {&plans[r].sends, &plans[r].receives})
          for (const PeerPlan& q : *side) {
            const bool local = m.node[q.peer] == n;
            (local ? d.messages_on : d.messages_off) += 1;
            (local ? d.bytes_on : d.bytes_off) += q.bytes;
          }
        for (const PeerPlan& q : plans[r].sends)
          if (m.node[q.peer] != n) out += q.bytes, ++direct_out;
        for (const PeerPlan& q : plans[r].receives)
          if (m.node[q.peer] != n) in += q.bytes, ++direct_in;
        for (const auto& [key, bytes] : messages) {
          const auto& [step, x, y] = key;
          if (x != r && y != r) continue;
          const bool local = m.node[x] == m.node[y];
          (local ? a.messages_on : a.messages_off) += 1;
          (local ? a.bytes_on : a.bytes_off) += bytes;
        }
        const auto same = [](const nodes::RankLoad& u, const nodes::RankLoad& v) {
          return u.messages_off == v.messages_off && u.messages_on == v.messages_on && u.bytes_off == v.bytes_off &&
                 u.bytes_on == v.bytes_on;
        };
        EXPECT_TRUE(same(t.direct[i], d)) << what << " rank " << r;
        EXPECT_TRUE(same(t.aggregated[i], a)) << what << " rank " << r << ": " << t.aggregated[i].messages_off << " "
                                              << a.messages_off << " " << t.aggregated[i].messages_on << " "
                                              << a.messages_on;
      }
      std::set<int> to, from;
      index_t step2_out = 0, step2_in = 0;
      for (const auto& [key, bytes] : messages) {
        const auto& [step, x, y] = key;
        if (step != 2) continue;
        EXPECT_NE(m.node[x], m.node[y]) << what;
        if (m.node[x] == n) to.insert(m.node[y]), ++step2_out;
        if (m.node[y] == n) from.insert(m.node[x]), ++step2_in;
      }
      EXPECT_EQ(t.out_bytes, out) << what;
      EXPECT_EQ(t.in_bytes, in) << what;
      EXPECT_EQ(t.direct_out, direct_out) << what;
      EXPECT_EQ(t.direct_in, direct_in) << what;
      index_t lanes_out = 0, lanes_in = 0;
      for (const int b : to) lanes_out += m.lanes(n, b);
      for (const int b : from) lanes_in += m.lanes(b, n);
      EXPECT_EQ(t.aggregated_out, step2_out) << what;
      EXPECT_LE(t.aggregated_out, lanes_out) << what << ": at most lanes(a, b) messages per node pair";
      EXPECT_EQ(t.aggregated_in, step2_in) << what;
      EXPECT_LE(t.aggregated_in, lanes_in) << what;
      EXPECT_EQ(t.forwarded_bytes, forwarded[n]) << what;
      if (HasFailure()) return;
    }
  }
}

// Lanes by volume (set_flows) on random node maps with random flows (sizes
// spread over four orders of magnitude): every block reaches its target in three
// steps through lane j of its node and lane j of the other for one j < lanes(a,b);
// lanes(a,b) = lanes(b,a) >= 1; a node with at most as many peer nodes as ranks
// has at most its ranks as lanes, all different ranks; the flows of a node pair
// are spread over its lanes (none carries more than the mean plus the largest
// flow), and a rank that is a lane for a node carries its own flows to it.
TEST(Nodes, LanesByVolumeOnRandomMaps) {
  Rng rng(1407);
  for (int c = 0; c < 400; ++c) {
    const int P = static_cast<int>(uniform(rng, 1, 40));
    nodes::NodeMap m = random_map(rng, P);
    std::vector<nodes::Flow> flows;
    const int n = static_cast<int>(uniform(rng, 0, 3 * P));
    for (int i = 0; i < n; ++i) {
      const int s = static_cast<int>(uniform(rng, 0, P - 1)), d = static_cast<int>(uniform(rng, 0, P - 1));
      index_t bytes = 1;
      for (int e = static_cast<int>(uniform(rng, 0, 4)); e > 0; --e) bytes *= 10;
      flows.push_back({s, d, bytes * uniform(rng, 1, 9)});
    }
    m.set_flows(flows);
    const std::string what = "case " + std::to_string(c);
    std::map<std::pair<int, int>, index_t> volume;       // (a, b), both ways
    std::map<std::pair<int, int>, index_t> out;          // (rank, node)
    for (const nodes::Flow& f : flows)
      if (m.node[f.src] != m.node[f.dst]) {
        const int a = m.node[f.src], b = m.node[f.dst];
        volume[{std::min(a, b), std::max(a, b)}] += f.bytes, out[{f.src, b}] += f.bytes;
      }
    std::map<std::pair<int, int>, std::map<int, index_t>> lane_bytes;  // (a<b) -> j -> bytes
    for (int s = 0; s < P; ++s)
      for (int d = 0; d < P; ++d) {
        const int a = m.node[s], b = m.node[d];
        const int h1 = m.holder(s, d, 1), h2 = m.holder(s, d, 2);
        ASSERT_TRUE(routed(m, s, d)) << what;
        if (a == b) continue;
        const int lanes = m.lanes(a, b);
        ASSERT_EQ(lanes, m.lanes(b, a)) << what;
        ASSERT_GE(lanes, 1) << what;
        int j = 0;
        while (j < lanes && !(m.lane(a, b, j) == h1 && m.lane(b, a, j) == h2)) ++j;
        ASSERT_LT(j, lanes) << what << ": " << s << " -> " << d << " not through a lane pair";
        if (volume.count({std::min(a, b), std::max(a, b)}) == 0) {
          ASSERT_EQ(lanes, 1) << what;
        }
      }
    // Each (rank, node) flow once, on the lane its holders name (any target on that node).
    for (const auto& [key, bytes] : out) {
      const int s = key.first, b = key.second, a = m.node[s];
      const int d = m.members[b].front(), h1 = m.holder(s, d, 1);
      int j = 0;
      while (m.lane(a, b, j) != h1 || m.lane(b, a, j) != m.holder(s, d, 2)) ++j;
      lane_bytes[{std::min(a, b), std::max(a, b)}][j] += bytes;
    }
    for (const auto& [ab, by_lane] : lane_bytes) {
      index_t largest = 0;
      for (const auto& [key, bytes] : out)
        if (const int a = m.node[key.first]; std::minmax(a, key.second) == std::minmax(ab.first, ab.second))
          largest = std::max(largest, bytes);
      // no lane carries more than its own ranks' flows or the mean plus the largest flow
      index_t total = 0;
      for (const auto& [j, bytes] : by_lane) total += bytes;
      const int lanes = m.lanes(ab.first, ab.second);
      const auto own = [&](int r, int b) {
        const auto f = out.find({r, b});
        return f == out.end() ? index_t{0} : f->second;
      };
      for (const auto& [j, bytes] : by_lane) {
        const index_t pre = own(m.lane(ab.first, ab.second, j), ab.second) + own(m.lane(ab.second, ab.first, j), ab.first);
        EXPECT_LE(bytes, std::max(pre, total / lanes + largest)) << what << " node pair " << ab.first << "-" << ab.second;
      }
    }
    // A rank that is a lane for another node carries its own flows to that node.
    for (const auto& [key, bytes] : out) {
      const int s = key.first, b = key.second, a = m.node[s];
      bool lane = false;
      for (int j = 0; j < m.lanes(a, b); ++j) lane = lane || m.lane(a, b, j) == s;
      if (lane) {
        EXPECT_EQ(m.holder(s, m.members[b].front(), 1), s) << what << " rank " << s << " node " << b;
      }
    }
    for (int a = 0; a < m.size(); ++a) {
      const size_t k = m.members[a].size();
      if (m.peers[a].size() > k) continue;
      std::set<int> ranks;
      size_t total = 0;
      for (const int b : m.peers[a])
        for (int j = 0; j < m.lanes(a, b); ++j) ranks.insert(m.lane(a, b, j)), ++total;
      EXPECT_LE(total, k) << what << " node " << a;
      EXPECT_EQ(ranks.size(), total) << what << " node " << a << ": a rank is a lane twice";
    }
    if (HasFailure()) return;
  }
}

// A RankPlan with only what node_traffic reads: peers and bytes.
std::vector<RankPlan> plans_of(int ranks, const std::vector<nodes::Flow>& flows) {
  std::vector<RankPlan> plans(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) plans[r].rank = r;
  for (const nodes::Flow& f : flows) {
    plans[f.src].sends.push_back({f.dst, f.bytes, {}});
    plans[f.dst].receives.push_back({f.src, f.bytes, {}});
  }
  return plans;
}

// The largest bytes any rank of `map` moves with aggregation (node_traffic).
index_t largest_rank_bytes(const nodes::NodeMap& map, const std::vector<RankPlan>& plans) {
  index_t most = 0;
  for (int n = 0; n < map.size(); ++n) {
    std::vector<RankPlan> mine;
    for (int r : map.members[n]) mine.push_back(plans[r]);
    for (const nodes::RankLoad& l : nodes::node_traffic(map, n, mine).aggregated)
      most = std::max(most, l.bytes_off + l.bytes_on);
  }
  return most;
}

// Issue 14: a node pair that carries more bytes gets more lanes. Three nodes of
// 4 ranks; ranks 0-2 of node 0 send 1000 bytes each to their partner on node 1
// (4-6), every rank of node 0 sends 10 to its partner on node 2. By count each
// pair has min(4/2, 4/1) = 2 lanes, and lane 0 of 0-1 (rank 0) carries ranks 0
// and 2's 1000 bytes: 3010 bytes through rank 0. By volume 0-1 has 3 lanes (node
// 0: one lane each, its 2 other ranks to the 3000-byte pair), 0-2 one; the lanes
// of 0-1 are the ranks that exchange bytes with the other node (0-2 and 4-6), and
// each carries its own: every 1000 bytes go once, straight to their target.
TEST(Nodes, HeavierNodePairGetsMoreLanes) {
  std::vector<nodes::Flow> flows;
  for (int i = 0; i < 4; ++i) {
    if (i < 3) flows.push_back({i, 4 + i, 1000});
    flows.push_back({i, 8 + i, 10});
  }
  const std::vector<RankPlan> plans = plans_of(12, flows);
  nodes::NodeMap by_count = nodes::consecutive(12, 4), by_volume = by_count;
  by_count.set_pairs({{0, 1}, {0, 2}});
  by_volume.set_flows(flows);
  EXPECT_EQ(by_count.lanes(0, 1), 2);
  EXPECT_EQ(by_count.lanes(0, 2), 2);
  EXPECT_EQ(by_volume.lanes(0, 1), 3);
  EXPECT_EQ(by_volume.lanes(1, 0), 3);
  EXPECT_EQ(by_volume.lanes(0, 2), 1);
  EXPECT_EQ(by_volume.lanes(1, 2), 1);  // no data: one lane
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(by_volume.holder(i, 4 + i, 1), i);      // its own lane
    EXPECT_EQ(by_volume.holder(i, 4 + i, 2), 4 + i);  // the other node's lane is its target
  }
  // The largest rank's bytes (both ways, on and off the node).
  EXPECT_EQ(largest_rank_bytes(by_count, plans), 3010);
  EXPECT_EQ(largest_rank_bytes(by_volume, plans), 1010);
}

// On the generator's cases (1-9 ranks, random and consecutive nodes), lanes by
// volume move no more bytes through the busiest rank than lanes by count, summed
// over the cases, and less in some.
TEST(Nodes, LanesByVolumeLoadTheBusiestRankLess) {
  Rng rng(2714);
  index_t count_sum = 0, volume_sum = 0;
  int better = 0, worse = 0;
  for (int c = 0; c < 300; ++c) {
    const int P = static_cast<int>(uniform(rng, 2, 9));
    const auto [src, dst, region] = redist::testing::random_case(rng, P);
    nodes::NodeMap by_count = nodes::consecutive(P, static_cast<int>(uniform(rng, 1, P))), by_volume = by_count;
    std::vector<RankPlan> plans;
    for (int r = 0; r < P; ++r) plans.push_back(plan_rank(src, dst, region, r, P));
    std::vector<std::pair<int, int>> pairs;
    std::vector<nodes::Flow> flows;
    for (int r = 0; r < P; ++r)
      for (const PeerPlan& q : plans[r].sends)
        pairs.push_back({by_count.node[r], by_count.node[q.peer]}), flows.push_back({r, q.peer, q.bytes});
    by_count.set_pairs(pairs);
    by_volume.set_flows(flows);
    const index_t a = largest_rank_bytes(by_count, plans), b = largest_rank_bytes(by_volume, plans);
    count_sum += a, volume_sum += b, better += b < a, worse += b > a;
  }
  std::printf("busiest rank's bytes over 300 cases: by count %lld, by volume %lld (%d cases lower, %d higher)\n",
              static_cast<long long>(count_sum), static_cast<long long>(volume_sum), better, worse);
  EXPECT_LT(volume_sum, count_sum);
  EXPECT_GT(better, worse);
}

}  // namespace
