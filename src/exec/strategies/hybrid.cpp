// `hybrid` (paper 002 sec. 2.2, algorithm 5, Fig. 2): the all-to-all/staged
// hybrid for S > R, in synchronous steps. The first R senders are active: in
// steps 1 .. R, active sender i sends receiver (i + k) mod R its block in step
// k + 1 (contention-free rounds, every receiver one message per step). The
// other S - R senders are idle meanwhile and stage: each sends its block for
// receiver j to that receiver's gatherer (idle sender j mod (S - R)), one
// receiver per step; in step R + 1 each gatherer sends each of its receivers
// one message with all the idle senders' data for it. Receivers get R + 1
// messages instead of S (Fig. 2: S = 4, R = 2, three steps instead of four).
// With S <= R it is the all-to-all in contention-free rounds.
#include <algorithm>

#include "exec/relay.hpp"

namespace redist::detail {
namespace {

class Hybrid final : public Route {
 public:
  using Route::Route;
  int steps(const std::vector<RelayBlock>&) override {
    senders_ = g_.senders;
    const std::vector<int> r = g_.receivers;
    R_ = static_cast<int>(r.size());
    S_ = static_cast<int>(senders_.size());
    sender_index_.assign(static_cast<size_t>(g_.size), -1);
    receiver_index_.assign(static_cast<size_t>(g_.size), -1);
    for (int i = 0; i < S_; ++i) sender_index_[static_cast<size_t>(senders_[static_cast<size_t>(i)])] = i;
    for (int j = 0; j < R_; ++j) receiver_index_[static_cast<size_t>(r[static_cast<size_t>(j)])] = j;
    return R_ + (S_ > R_ ? 1 : 0);
  }
  int holder(const RelayBlock& b, int step) const override {
    const Where w = where(b);
    return step < w.leaves ? b.src : step < w.home ? w.via : b.dst;
  }
  // Two moves at most (R + 1 steps): listed, not found by asking every step.
  void hops(size_t k, const RelayBlock& b, int, std::vector<Hop>& out) const override {
    const Where w = where(b);
    int at = b.src;
    for (const auto& [step, to] : {std::pair{w.leaves, w.via}, std::pair{w.home, b.dst}})
      if (to != at) out.push_back({k, step, at, to, at == b.src}), at = to;
  }

 private:
  // Block b leaves its source in step `leaves` for `via` and reaches its target
  // in step `home` (via == b.dst and home == leaves for a direct block).
  struct Where {
    int leaves, home, via;
  };
  Where where(const RelayBlock& b) const {
    const int i = sender_index_[static_cast<size_t>(b.src)], j = receiver_index_[static_cast<size_t>(b.dst)];
    if (i < 0 || j < 0) return {1, 1, b.dst};  // outside the groups (not in a group plan): direct, in step 1
    if (i < R_) {
      const int k = ((j - i) % R_ + R_) % R_;  // active: home in step k + 1
      return {k + 1, k + 1, b.dst};
    }
    const int idle = S_ - R_, k = ((j - (i - R_)) % R_ + R_) % R_;
    return {k + 1, R_ + 1, senders_[static_cast<size_t>(R_ + j % idle)]};  // staged on the receiver's gatherer
  }

  std::vector<int> senders_, sender_index_, receiver_index_;
  int S_ = 1, R_ = 1;
};

// Every byte once (active senders) or twice (idle senders' staged bytes).
Prediction predict(const RankPlan& rp, const Machine& m) { return relay_prediction(rp, m, 1.5, 2); }

}  // namespace

StrategyEntry hybrid_strategy() {
  return relay_entry<Hybrid>("hybrid",
                       "paper 002: all-to-all/staged hybrid: R senders send while S-R stage, R+1 steps (S>R)",
                       predict);
}

}  // namespace redist::detail
