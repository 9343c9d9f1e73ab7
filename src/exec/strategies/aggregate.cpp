// `aggregate` (issue 14 item 3): one message per node pair. Ranks are grouped in
// nodes (MPI_COMM_TYPE_SHARED, or nodes of Options::node_size / $REDIST_NODE_SIZE
// consecutive ranks); what a rank sends to another node goes first to its node's
// lane for that node, then in one message to the other node's lane for this one,
// which hands it to its target (plan/nodes.hpp: the lanes spread a node's node
// pairs over its ranks). Blocks within a node go directly, in step 1. For many
// ranks per node on a network where a message's startup costs more than the
// two extra on-node copies: a node of K ranks exchanging with N other nodes sends
// N messages instead of up to K*K*N. On the relay engine (relay.hpp).
#include "exec/relay.hpp"
#include "exec/shm_window.hpp"
#include "plan/nodes.hpp"

namespace redist::detail {
namespace {

class Aggregate final : public Relay {
 public:
  using Relay::Relay;

 protected:
  int steps(const std::vector<RelayBlock>&) override {  // collective: every rank's node
    nodes_ = nodes::from_leaders(node_leaders(plan_.comm, plan_.options.node_size));
    return 3;
  }
  int holder(const RelayBlock& b, int step) const override { return nodes_.holder(b.src, b.dst, step); }

 private:
  nodes::NodeMap nodes_;
};

// Without MPI the nodes are unknown: the model charges every remote byte three
// hops in three messages each way (the other nodes' case); Plan::predictions
// uses the schedule itself (Relay::predict_schedule), where on-node blocks
// travel once.
Prediction predict(const RankPlan& rp, const Machine& m) { return relay_prediction(rp, m, 3.0, 3); }

}  // namespace

StrategyEntry aggregate_strategy() {
  return relay_entry<Aggregate>(
      "aggregate", "one message per node pair: through a lane rank on each node (--node-size), on-node directly",
      predict);
}

}  // namespace redist::detail
