// Aggregation per node pair (src/plan/nodes.hpp), without MPI: the lane rule's
// properties on random node maps, and a node's traffic (node_traffic) against a
// brute-force count of the relay's messages: every block's holders step by step,
// one message per (step, holder, next holder) as the relay engine sends them.
#include <gtest/gtest.h>

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
        ASSERT_EQ(m.holder(s, d, 3), d);
        if (a == b) {
          ASSERT_EQ(h1, d);
          ASSERT_EQ(h2, d);
          continue;
        }
        ASSERT_EQ(m.node[h1], a) << c;
        ASSERT_EQ(m.node[h2], b) << c;
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
        if (with_pairs && others <= k) ASSERT_EQ(n, 1) << "case " << c << ": rank " << r << " is a lane twice";
        if (!with_pairs) ASSERT_LE(n, (others + k - 1) / k) << c;
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
    if (c % 3 != 0) {  // the lanes from the node pairs that exchange data, as `aggregate` sets them
      std::vector<std::pair<int, int>> pairs;
      for (int r = 0; r < P; ++r)
        for (const PeerPlan& q : plans[r].sends) pairs.push_back({m.node[r], m.node[q.peer]});
      m.set_pairs(pairs);
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

}  // namespace
