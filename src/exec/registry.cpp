// The registry: every strategy, in the order --help, `all`, the conformance
// suite and the benchmarks list them. A new strategy is a file in strategies/
// defining `StrategyEntry NAME_strategy()` and one line here.
#include <algorithm>

#include "exec/strategy.hpp"

#define REDIST_STRATEGIES(X) \
  X(p2p)                     \
  X(segment)                 \
  X(p2p_pipelined)           \
  X(alltoallv)               \
  X(alltoallw)               \
  X(direct)                  \
  X(shm)                     \
  X(phased)                  \
  X(phased_sendrecv)         \
  X(phased_unsync)           \
  X(phased_dt)              \
  X(taskgraph)               \
  X(centralized)             \
  X(staged)                  \
  X(multistage)              \
  X(hybrid)                  \
  X(aggregate)

namespace redist {
namespace detail {

#define REDIST_DECLARE(name) StrategyEntry name##_strategy();
REDIST_STRATEGIES(REDIST_DECLARE)

const std::vector<StrategyEntry>& registry() {
#define REDIST_ENTRY(name) name##_strategy(),
  static const std::vector<StrategyEntry> all = {REDIST_STRATEGIES(REDIST_ENTRY)};
  return all;
}

int find_strategy(std::string_view name) {
  const auto& r = registry();
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].name == name) return static_cast<int>(i);
  return -1;
}

// node_of, where given, names the node of this rank and of each of its peers.
void check_node_of(const RankPlan& rp, std::span<const int> node_of, const char* what) {
  if (node_of.empty()) return;
  const auto covers = [&](int r) { return r >= 0 && static_cast<size_t>(r) < node_of.size(); };
  bool ok = covers(rp.rank);
  for (const std::vector<PeerPlan>* side : {&rp.sends, &rp.receives})
    for (const PeerPlan& pp : *side) ok = ok && covers(pp.peer);
  if (!ok)
    fail(what, ": node_of has ", node_of.size(), " entries; it needs one per rank of the plan (rank ", rp.rank,
         " and its peers)");
}

}  // namespace detail

const std::vector<StrategyInfo>& strategies() {
  static const std::vector<StrategyInfo> all = [] {
    std::vector<StrategyInfo> v;
    for (const detail::StrategyEntry& e : detail::registry())
      v.push_back({std::string(e.name), std::string(e.summary), e.arithmetic, std::string(e.model_condition),
                   std::string(e.heap_model)});
    return v;
  }();
  return all;
}

std::string arithmetic_strategies() {
  std::string s;
  for (const StrategyInfo& i : strategies())
    if (i.arithmetic) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> v;
  for (const StrategyInfo& s : strategies()) v.push_back(s.name);
  return v;
}

void check_strategy(std::string_view name) {
  if (name == kAuto || detail::find_strategy(name) >= 0) return;
  std::string allowed;
  for (const StrategyInfo& s : strategies()) allowed += s.name + ", ";
  detail::fail("unknown strategy '", name, "'; allowed: ", allowed, kAuto);
}

Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap) {
  return predict(rp, strategy, m, heap, {});
}

Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap,
                   std::span<const int> node_of) {
  return predict(rp, strategy, m, heap, node_of, 0);
}

Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap,
                   std::span<const int> node_of, index_t max_buffer_bytes) {
  const int i = detail::find_strategy(strategy);
  if (i < 0) {
    check_strategy(strategy);  // throws for an unknown name
    detail::fail("predict: auto is not a strategy to predict; predict each strategy and take the smallest");
  }
  const detail::StrategyEntry& e = detail::registry()[static_cast<size_t>(i)];
  detail::check_node_of(rp, node_of, "predict");
  if (e.predict_nodes) return e.predict_nodes(rp, m, heap && e.suits, node_of);
  if (heap && e.suits) {
    if (e.predict_heap) return e.predict_heap(rp, m);
    Prediction never;
    never.comm = std::numeric_limits<double>::infinity();
    return never;
  }
  if (max_buffer_bytes > 0 && e.predict_budget) return e.predict_budget(rp, m, max_buffer_bytes);
  return e.predict(rp, m);
}

index_t extra_memory(const RankPlan& rp, std::string_view strategy, const Options& options) {
  const int i = detail::find_strategy(strategy);
  if (i < 0) {
    check_strategy(strategy);
    detail::fail("extra_memory: auto is not a strategy; ask each strategy");
  }
  const detail::StrategyEntry& e = detail::registry()[static_cast<size_t>(i)];
  const bool arithmetic = !options.arithmetic.identity();
  return e.extra_bytes ? e.extra_bytes(rp, options.max_buffer_bytes, arithmetic) : detail::packed_volume(rp);
}

index_t extra_memory(const RankPlan& rp, std::string_view strategy, index_t max_buffer_bytes) {
  Options o;
  o.max_buffer_bytes = max_buffer_bytes;
  return extra_memory(rp, strategy, o);
}

index_t extra_memory(const RankPlan& rp, std::string_view strategy, index_t max_buffer_bytes, bool heap,
                     std::span<const int> node_of) {
  const int i = detail::find_strategy(strategy);
  if (i < 0) return extra_memory(rp, strategy, max_buffer_bytes);  // throws: unknown, or auto
  detail::check_node_of(rp, node_of, "extra_memory");
  const detail::StrategyEntry& e = detail::registry()[static_cast<size_t>(i)];
  return e.extra_nodes ? e.extra_nodes(rp, heap, node_of) : extra_memory(rp, strategy, max_buffer_bytes);
}

}  // namespace redist
