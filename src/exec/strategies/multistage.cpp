// `multistage` (paper 002 sec. 2.2, algorithm 4): a combining network in
// ceil(log2 P) steps over the plan's P ranks (the union of the groups). Bruck's
// index scheme, which is the butterfly for any P: a block from s to d has
// distance (d - s) mod P; in step k every rank sends to rank + 2^k one message
// holding every block it has whose distance has bit k set. One message per rank
// and step, each byte moved up to log2 P times. For costly message startups.
#include "exec/relay.hpp"

namespace redist::detail {
namespace {

class Multistage final : public Route {
 public:
  using Route::Route;
  int steps(const std::vector<RelayBlock>&) override {
    int t = 0;
    while ((1 << t) < g_.size) ++t;
    return std::max(t, 1);
  }
  int holder(const RelayBlock& b, int step) const override {
    const int p = g_.size, delta = ((b.dst - b.src) % p + p) % p;
    return (b.src + (delta & ((1 << step) - 1))) % p;  // the bits below `step` applied
  }
};

Prediction predict(const RankPlan& rp, const Machine& m) {
  int peers = static_cast<int>(std::max(rp.sends.size(), rp.receives.size())), logp = 0;
  while ((1 << logp) < peers + 1) ++logp;
  return relay_prediction(rp, m, std::max(1, logp), std::max(1, logp));
}

}  // namespace

StrategyEntry multistage_strategy() {
  return relay_entry<Multistage>("multistage",
                           "paper 002: butterfly combining (Bruck), one message per rank in each of log2 P steps",
                           predict);
}

}  // namespace redist::detail
