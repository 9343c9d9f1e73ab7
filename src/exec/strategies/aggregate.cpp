// `aggregate` (issue 14 item 3): messages per node pair, not per rank pair.
// Ranks are grouped in nodes (MPI_COMM_TYPE_SHARED, or nodes of
// Options::node_size / $REDIST_NODE_SIZE consecutive ranks); what a rank sends to
// another node goes first to one of its node's lanes for that node, then in one
// message to the matching lane of the other node, which hands it to its target
// (plan/nodes.hpp, set_flows: a node pair gets lanes by its bytes, at least one,
// so that all ranks of a node share its traffic and a heavier pair has more lanes;
// each rank's flows to a node go to that pair's least loaded lane). Blocks within a node go directly, in step 1. For many ranks per node
// on a network where a message's startup costs more than the two extra on-node
// copies: a node of K ranks exchanging with N other nodes sends about K messages
// (N when N >= K) instead of up to K*K*N. On the relay engine (relay.hpp).
#include "exec/relay.hpp"
#include "exec/shm_window.hpp"
#include "plan/nodes.hpp"

namespace redist::detail {
namespace {

// The route, pure: the nodes given as each union rank's node leader.
class AggregateRoute final : public Route {
 public:
  AggregateRoute(RelayGroups g, std::vector<int> leaders) : Route(std::move(g)), leaders_(std::move(leaders)) {}
  int steps(const std::vector<RelayBlock>& blocks) override {
    nodes_ = nodes::from_leaders(leaders_);
    std::vector<nodes::Flow> flows;  // the lanes by volume (every rank has the whole list: the same lanes)
    for (const RelayBlock& b : blocks) flows.push_back({b.src, b.dst, b.bytes});
    nodes_.set_flows(flows);
    return 3;
  }
  int holder(const RelayBlock& b, int step) const override { return nodes_.holder(b.src, b.dst, step); }

 private:
  std::vector<int> leaders_;
  nodes::NodeMap nodes_;
};

// Collective: the plan's nodes (MPI_COMM_TYPE_SHARED, Options::node_size).
std::unique_ptr<Route> route_of(PlanCore& p) {
  return std::make_unique<AggregateRoute>(relay_groups(p), node_leaders(p.comm, p.options.node_size));
}

// Without MPI the nodes are unknown: the model charges every remote byte three
// hops in three messages each way (the other nodes' case); Plan::predictions
// uses the schedule itself (Relay::predict_schedule), where on-node blocks
// travel once.
Prediction predict(const RankPlan& rp, const Machine& m) { return relay_prediction(rp, m, 3.0, 3); }

}  // namespace

// A relay entry whose route needs the nodes, found collectively when the plan
// makes it; no `route` without a plan (relay_counts, `redist plan --senders`:
// `redist plan --ranks-per-node` counts it instead).
StrategyEntry aggregate_strategy() {
  StrategyEntry e{"aggregate",
                  "messages per node pair, through lane ranks on each node (--node-size); on a node directly",
                  {},
                  [](PlanCore& p) -> std::unique_ptr<Strategy> { return std::make_unique<Relay>(p, route_of(p)); },
                  predict,
                  nullptr};
  e.arithmetic = true;  // a Relay: the target is written only by copy_locals and unpack_peer
  e.predict_plan = [](PlanCore& p, const Machine& m) { return Relay(p, route_of(p)).predict_schedule(m); };
  e.extra_plan = [](PlanCore& p) { return Relay(p, route_of(p)).buffer_bytes(); };
  return e;
}

}  // namespace redist::detail
