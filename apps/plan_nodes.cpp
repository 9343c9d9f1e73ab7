// `redist plan --ranks-per-node K` (plan_nodes.hpp).
#include "plan_nodes.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "cli.hpp"
#include "plan/nodes.hpp"

namespace redist::cli {

void print_node_traffic(const Layout& src, const Layout& dst, const Region& region, int ranks, int per_node,
                        int only_rank, const Machine* machine, const std::vector<std::pair<int, int>>* sends,
                        const std::vector<long long>* send_bytes) {
  nodes::NodeMap map = nodes::consecutive(ranks, per_node);
  {  // the lanes need every rank pair's bytes (as `aggregate` sets them)
    std::vector<nodes::Flow> flows;
    auto add = [&](int r, int peer, index_t bytes) {
      if (map.node[static_cast<size_t>(r)] != map.node[static_cast<size_t>(peer)]) flows.push_back({r, peer, bytes});
    };
    if (sends) {
      for (size_t i = 0; i < sends->size(); ++i) add((*sends)[i].first, (*sends)[i].second, (*send_bytes)[i]);
    } else {
      Progress progress("redist plan: --ranks-per-node: planning every rank for the lanes", ranks);
      for (int r = 0; r < ranks; ++r) {
        for (const PeerPlan& q : plan_rank(src, dst, region, r, ranks).sends) add(r, q.peer, q.bytes);
        progress.at(r + 1);
      }
    }
    map.set_flows(flows);
  }
  const int first = only_rank >= 0 ? map.node[static_cast<size_t>(only_rank)] : 0;
  const int last = only_rank >= 0 ? first + 1 : map.size();
  // Paper 002 Eq. 1 per rank, T = t_m M + t_w V: messages between nodes through the
  // calibration's exchange curve (calibrate with one rank on each of two nodes for
  // a cluster's), messages on the node as two copies (in and out of MPI's shared
  // buffers) at the node's memcpy rate, plus a startup each.
  auto eq1 = [machine](const nodes::RankLoad& l) {
    if (!machine) return 0.0;
    const double tm = machine->exchange_time(0);
    const double bnode = machine->bmemcpy_node > 0 ? machine->bmemcpy_node : machine->bmemcpy;
    return double(l.messages_off + l.messages_on) * tm + (machine->exchange_time(double(l.bytes_off)) - tm) +
           2.0 * double(l.bytes_on) / bnode;
  };
  struct Most {  // per column, the largest of any planned node / rank
    index_t out = 0, in = 0;
    nodes::RankLoad rank;
    double time = 0;
    void add(const std::vector<nodes::RankLoad>& loads, const std::function<double(const nodes::RankLoad&)>& t) {
      for (const nodes::RankLoad& l : loads) {
        rank.messages_off = std::max(rank.messages_off, l.messages_off);
        rank.messages_on = std::max(rank.messages_on, l.messages_on);
        rank.bytes_off = std::max(rank.bytes_off, l.bytes_off);
        rank.bytes_on = std::max(rank.bytes_on, l.bytes_on);
        time = std::max(time, t(l));
      }
    }
  } direct, aggregated;
  index_t out_bytes = 0, in_bytes = 0, on_node = 0, forwarded = 0;
  Progress progress("redist plan: --ranks-per-node: planning the nodes", last - first);
  for (int n = first; n < last; ++n) {
    progress.at(n - first);
    std::vector<RankPlan> plans;
    for (int r : map.members[static_cast<size_t>(n)]) plans.push_back(plan_rank(src, dst, region, r, ranks));
    const nodes::NodeTraffic t = nodes::node_traffic(map, n, plans);
    direct.out = std::max(direct.out, t.direct_out), direct.in = std::max(direct.in, t.direct_in);
    aggregated.out = std::max(aggregated.out, t.aggregated_out);
    aggregated.in = std::max(aggregated.in, t.aggregated_in);
    direct.add(t.direct, eq1), aggregated.add(t.aggregated, eq1);
    out_bytes = std::max(out_bytes, t.out_bytes), in_bytes = std::max(in_bytes, t.in_bytes);
    on_node = std::max(on_node, t.on_node_bytes), forwarded = std::max(forwarded, t.forwarded_bytes);
  }
  progress.finish();
  const std::vector<int>& mine = map.members[static_cast<size_t>(first)];
  // "2 nodes of 3 ranks" on 4 ranks had a node of 1: the last node's size is said.
  const int tail = ranks % per_node;
  const std::string nodes_of = counted(map.size(), "node", "nodes") + " of " + counted(per_node, "rank", "ranks") +
                               (tail ? " (the last of " + std::to_string(tail) + ")" : "");
  if (only_rank >= 0)
    std::printf("\nnodes     %s; node %d (ranks %d..%d)\n", nodes_of.c_str(), first, mine.front(), mine.back());
  else
    std::printf("\nnodes     %s; each figure the largest of any node or rank\n", nodes_of.c_str());
  std::printf("  %-12s %13s %13s   %-31s %s\n", "", "messages out", "messages in",
              "a rank's messages: other nodes", "bytes: other nodes");
  std::printf("  %-12s %13s %13s   %-31s %s\n", "", "of the node", "of the node", "                   / this node",
              "/ this node");
  for (const auto& [name, m] : {std::pair<const char*, const Most&>{"rank pairs", direct}, {"aggregate", aggregated}})
    std::printf("  %-12s %13lld %13lld   %12lld / %-14lld %s / %s\n", name, (long long)m.out, (long long)m.in,
                (long long)m.rank.messages_off, (long long)m.rank.messages_on,
                human_bytes(double(m.rank.bytes_off)).c_str(), human_bytes(double(m.rank.bytes_on)).c_str());
  std::printf("  between nodes %s out, %s in; on the node %s directly, %s forwarded through lanes\n",
              human_bytes(double(out_bytes)).c_str(), human_bytes(double(in_bytes)).c_str(),
              human_bytes(double(on_node)).c_str(), human_bytes(double(forwarded)).c_str());
  if (machine)
    std::printf("  model (Eq. 1, slowest rank): rank pairs %s, aggregate %s%s\n", human_time(direct.time).c_str(),
                human_time(aggregated.time).c_str(), aggregated.time < direct.time ? "  <- aggregation pays" : "");
}

}  // namespace redist::cli
