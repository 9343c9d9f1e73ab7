// `centralized` (paper 002 sec. 2.2, algorithm 2): every sender's data goes to
// one sender (the hub: the sender group's rank 0), which forwards to each
// receiver all it gets: S - 1 messages in, R out (S + R - 1), each byte moved
// twice (~2D volume), and nothing concurrent at the hub. For networks of low
// connectivity; here mostly the model's other end from all-to-all (`p2p`).
#include "exec/relay.hpp"

namespace redist::detail {
namespace {

class Centralized final : public Route {
 public:
  using Route::Route;
  int steps(const std::vector<RelayBlock>&) override {
    hub_ = g_.senders.front();
    return 2;
  }
  int holder(const RelayBlock&, int) const override { return hub_; }  // step 1; step 2 ends home

 private:
  int hub_ = 0;
};

// Every byte twice (to the hub, from the hub), one message each way; the hub's
// own plan is only its share, so the model under-counts the hub (docs/groups.md).
Prediction predict(const RankPlan& rp, const Machine& m) { return relay_prediction(rp, m, 2.0, 2); }

}  // namespace

StrategyEntry centralized_strategy() {
  return relay_entry<Centralized>("centralized",
                            "paper 002: gather on the first sender, which sends each receiver one message (S+R-1)",
                            predict);
}

}  // namespace redist::detail
