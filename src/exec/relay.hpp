// Strategies that forward data through other ranks (paper 002 sec. 2.2: the
// centralized, staged and multistage algorithms). The unit is a BLOCK: all that
// one rank sends to one other (p2p's message, packed by pack_peer on its source
// rank and unpacked by unpack_peer on its target). A route says where each
// block is after each step; the engine (relay.cpp) turns the routes into
// messages: in a step a rank sends one message to each rank it forwards blocks
// to, the blocks one after another, and a block may wait on a rank for a later
// step. Routes are pure functions of the block list, so every rank computes the
// same messages without talking; the block list is gathered once, on the plan's
// first run of the strategy (CDT's init/exec split: reused by every later run).
#pragma once

#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

struct RelayBlock {
  int src, dst;
  index_t bytes;
};

class Relay : public Strategy {
 public:
  using Strategy::Strategy;
  void run(const SrcBlocks& src, const DstBlocks& dst) final;
  // After the first run (tests): messages this rank sends per execute.
  index_t messages_sent() const { return messages_sent_; }
  // Collective (gathers the block list): this rank's time by paper 002 Eq. 1
  // over its own schedule: per step, the larger of its sends and its receives,
  // each message through the measured exchange curve (t_m + t_w * bytes); the
  // packing, unpacking and the copies of forwarded blocks at memcpy speed.
  Prediction predict_schedule(const Machine& m);

 protected:
  // Called once on the first run with every block of the plan (same on every
  // rank, ordered by source rank): the number of steps of the route.
  virtual int steps(const std::vector<RelayBlock>& blocks) = 0;
  // Where block `b` is after step `step` (1 .. steps); after the last: b.dst.
  virtual int holder(const RelayBlock& b, int step) const = 0;

 private:
  struct Piece {  // a block's bytes in a message: copied from `slot` to `at`
    index_t slot, at, bytes;
  };
  struct Message {
    int peer;
    index_t offset, bytes;     // in the slot area (direct) or the step's send area (copied)
    bool copied = false;       // sent from the send area, assembled from `pieces`
    std::vector<Piece> pieces;
  };
  struct Final {  // a block that arrives home: unpack it from its slot
    int receive_index;
    index_t slot;
  };
  struct Step {
    std::vector<Message> sends, receives;
    std::vector<Final> finals;
  };
  void schedule();  // collective: the block list and this rank's steps
  void setup();     // schedule() and the buffers
  bool scheduled_ = false;
  index_t slot_bytes_ = 0, send_area_bytes_ = 0, forwarded_bytes_ = 0;

  bool ready_ = false;
  std::vector<std::pair<int, index_t>> origins_;  // (rp.sends index, slot)
  std::vector<Step> steps_;
  std::unique_ptr<std::byte[]> slots_, send_area_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> status_;
  std::vector<int> request_peer_;
  index_t messages_sent_ = 0;
};

// A relay strategy's registry entry: `predict` without MPI, predict_schedule for
// Plan::predictions and auto.
template <class S>
StrategyEntry relay_entry(std::string_view name, std::string_view summary,
                          Prediction (*predict)(const RankPlan&, const Machine&)) {
  StrategyEntry e = entry<S>(name, summary, predict);
  e.predict_plan = [](PlanCore& p, const Machine& m) { return S(p).predict_schedule(m); };
  return e;
}

// Predictions of the relay strategies (paper 002 Eq. 1, T = t_m M + t_w V):
// `hops` times this rank's own volume, in `messages` messages each way.
Prediction relay_prediction(const RankPlan& rp, const Machine& m, double hops, index_t messages);

}  // namespace redist::detail
