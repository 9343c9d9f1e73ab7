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

#include <memory>
#include <string_view>
#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

struct RelayBlock {
  int src, dst;
  index_t bytes;
};

// The groups a route runs between, in union ranks (PlanCore::group_senders and
// group_receivers; every rank for a plan of one group).
struct RelayGroups {
  int size = 1;
  std::vector<int> senders, receivers;
};

// A route: where each block is after each step. Pure (no MPI, no plan), so that
// `redist plan --senders` computes every rank's messages from the block list
// alone (relay_counts) with the same code the engine runs.
class Route {
 public:
  explicit Route(RelayGroups g) : g_(std::move(g)) {}
  virtual ~Route() = default;
  // Called once with every block of the plan (same on every rank, ordered by
  // source rank): the number of steps of the route.
  virtual int steps(const std::vector<RelayBlock>& blocks) = 0;
  // Where block `b` is after step `step` (1 .. steps); after the last: b.dst.
  virtual int holder(const RelayBlock& b, int step) const = 0;
  struct Hop {
    size_t block;
    int step, from, to;
    bool first;  // the block's first move (it leaves its source)
  };
  // Block k's moves, in step order, appended to `out`. The default asks holder()
  // at every step (O(steps) per block); a route whose blocks move in few of many
  // steps (hybrid: R + 1 steps, two moves at most) lists its moves directly.
  virtual void hops(size_t k, const RelayBlock& b, int T, std::vector<Hop>& out) const;

 protected:
  RelayGroups g_;
};

// One rank's part of the routes: the messages of each step, the slots of the
// blocks that start, pass or end here. The engine runs it; relay_counts sums it.
struct RelaySchedule {
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
    size_t block;
    index_t slot;
  };
  struct Step {
    std::vector<Message> sends, receives;
    std::vector<Final> finals;
  };
  std::vector<std::pair<size_t, index_t>> origins;  // (block starting here, its slot)
  std::vector<Step> steps;
  index_t slot_bytes = 0, send_area_bytes = 0, forwarded_bytes = 0;
};

// Every block's moves (Route::hops), in block order.
std::vector<Route::Hop> route_hops(const Route& route, const std::vector<RelayBlock>& blocks, int T);
// Rank `rank`'s schedule from the hops that touch it (`mine`: indices into
// `hops`, ascending).
RelaySchedule relay_schedule(int rank, int T, const std::vector<RelayBlock>& blocks, const std::vector<Route::Hop>& hops,
                             const std::vector<size_t>& mine);

// Per rank, what one execute moves (no MPI): messages and bytes each way, the
// slots and the send area (the strategy's buffers, Plan::buffer_bytes).
struct RelayCounts {
  index_t messages_sent = 0, messages_received = 0, bytes_sent = 0, bytes_received = 0, buffer_bytes = 0;
  // For the model (Relay::predict_schedule's terms): the bytes this rank forwards,
  // and, with a machine given, per step the larger of its sends' and its receives'
  // times through the exchange curve, summed.
  index_t forwarded_bytes = 0;
  double comm_seconds = 0;
};
struct RouteCounts {
  std::string_view strategy;
  int steps = 0;
  std::vector<RelayCounts> ranks;  // union rank -> its figures
};
// For `p2p` (one message per block, one step) and every strategy with a route
// (StrategyEntry::route), on the union of groups `g` with every rank's blocks.
// O(blocks x moves): S = R = 1024 with every pair a block (1M blocks) in 2 s on
// one core (redist plan --senders, docs/groups.md).
std::vector<RouteCounts> relay_counts(const std::vector<RelayBlock>& blocks, const RelayGroups& g,
                                     const Machine* machine = nullptr);
// The groups of `redist run --senders S` on P ranks in union ranks: the first S
// send, the others receive (all P with `overlap`); S == 0: one group.
RelayGroups union_groups(int P, int S, bool overlap);
// relay_counts of that transfer (src on the senders, dst on the receivers, in
// their groups' ranks), every union rank planned alone, as make_group_plan plans.
std::vector<RouteCounts> group_route_counts(const Layout& src, const Layout& dst, const Region& region, int P, int S,
                                            bool overlap);

class Relay : public Strategy {
 public:
  Relay(PlanCore& plan, std::unique_ptr<Route> route) : Strategy(plan), route_(std::move(route)) {}
  void run(const SrcBlocks& src, const DstBlocks& dst) final;
  // After the first run (tests): messages this rank sends per execute.
  index_t messages_sent() const { return messages_sent_; }
  // Collective (gathers the block list): this rank's time by paper 002 Eq. 1
  // over its own schedule: per step, the larger of its sends and its receives,
  // each message through the measured exchange curve (t_m + t_w * bytes); the
  // packing, unpacking and the copies of forwarded blocks at memcpy speed.
  Prediction predict_schedule(const Machine& m);
  // Collective (gathers the block list): the bytes of its slots and send area on
  // this rank, what its first run allocates (Plan::buffer_bytes).
  index_t buffer_bytes();

 private:
  void schedule();  // collective: the block list and this rank's steps
  void setup();     // schedule() and the buffers
  std::unique_ptr<Route> route_;
  bool scheduled_ = false;
  RelaySchedule s_;
  std::vector<std::pair<int, index_t>> origins_;  // (rp.sends index, slot)
  std::vector<std::vector<std::pair<int, index_t>>> finals_;  // per step: (rp.receives index, slot)

  bool ready_ = false;
  std::unique_ptr<std::byte[]> slots_, send_area_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> status_;
  std::vector<int> request_peer_;
  index_t messages_sent_ = 0;
};

RelayGroups relay_groups(const PlanCore& p);

// A relay strategy's registry entry: `predict` without MPI, predict_schedule for
// Plan::predictions and auto.
// R: the strategy's Route, made from the plan's groups. Its buffers (the slots)
// depend on every rank's blocks: extra_bytes without MPI is this rank's own
// volume (a lower bound), extra_plan the collective exact figure.
template <class R>
StrategyEntry relay_entry(std::string_view name, std::string_view summary,
                          Prediction (*predict)(const RankPlan&, const Machine&)) {
  StrategyEntry e{name, summary, {},
                  [](PlanCore& p) -> std::unique_ptr<Strategy> {
                    return std::make_unique<Relay>(p, std::make_unique<R>(relay_groups(p)));
                  },
                  predict, nullptr};
  e.arithmetic = true;  // the target is written only by copy_locals and unpack_peer (Relay::run)
  e.predict_plan = [](PlanCore& p, const Machine& m) { return Relay(p, std::make_unique<R>(relay_groups(p))).predict_schedule(m); };
  e.extra_plan = [](PlanCore& p) { return Relay(p, std::make_unique<R>(relay_groups(p))).buffer_bytes(); };
  e.route = [](RelayGroups g) -> std::unique_ptr<Route> { return std::make_unique<R>(std::move(g)); };
  return e;
}

// Predictions of the relay strategies (paper 002 Eq. 1, T = t_m M + t_w V):
// `hops` times this rank's own volume, in `messages` messages each way.
Prediction relay_prediction(const RankPlan& rp, const Machine& m, double hops, index_t messages);

}  // namespace redist::detail
