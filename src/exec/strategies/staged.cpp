// `staged` (paper 002 sec. 2.2, algorithm 3): C = min(S, R) staging ranks, the
// first C senders; receiver i is served by stage i mod C. Senders send each
// stage one message with all they have for its receivers (all-to-all among
// senders), each stage sends each of its receivers one message with everything
// for it: at most one message per stage between the groups' receivers, each
// byte moved at most twice (~2D). For links between the groups with costly
// message startups.
#include <algorithm>

#include "exec/relay.hpp"

namespace redist::detail {
namespace {

class Staged final : public Route {
 public:
  using Route::Route;
  int steps(const std::vector<RelayBlock>&) override {
    const std::vector<int> s = g_.senders, r = g_.receivers;
    const size_t c = std::min(s.size(), r.size());
    stage_.assign(static_cast<size_t>(g_.size), -1);
    for (size_t i = 0; i < r.size(); ++i) stage_[static_cast<size_t>(r[i])] = s[i % c];
    return 2;
  }
  int holder(const RelayBlock& b, int) const override {
    const int st = stage_[static_cast<size_t>(b.dst)];
    return st >= 0 ? st : b.dst;  // a target outside the receiver group (none in a group plan): direct
  }

 private:
  std::vector<int> stage_;  // union rank -> its stage
};

Prediction predict(const RankPlan& rp, const Machine& m) { return relay_prediction(rp, m, 2.0, 2); }

}  // namespace

StrategyEntry staged_strategy() {
  return relay_entry<Staged>("staged",
                       "paper 002: senders gather on min(S,R) staging senders, each sends its receivers one message",
                       predict);
}

}  // namespace redist::detail
