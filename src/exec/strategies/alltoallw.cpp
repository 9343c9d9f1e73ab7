// `alltoallw`: MPI derived datatypes built from the plan's segments, so MPI reads
// and writes user memory directly, no packing (paper 000 sec. 3.2 explains why
// per-shape datatypes are usually slower than packing: we measure it). The
// types hold absolute addresses, so they are rebuilt when the block pointers
// change between executes.
#include "cost/model.hpp"
#include "exec/datatypes.hpp"
#include "exec/pack.hpp"

namespace redist::detail {
namespace {

class Alltoallw final : public Strategy {
 public:
  using Strategy::Strategy;

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    PlanCore& p = plan_;
    const PeerTypes& types = types_.get(p, src, dst);
    copy_locals(p, src, dst);
    call_.run(p, types.send, types.recv);
  }

 private:
  PeerTypesAt types_{"alltoallw"};  // one per peer and direction, for the block pointers last seen
  AlltoallwCall call_;
};

// T_comm: MPI's datatype engine packs this rank's rows on the way out and unpacks
// its peers' rows on the way in. The curve `datatype` times both at one row size
// plus the wire, so each side is charged half of what the curve has beyond a
// contiguous exchange, at its own rows, and the wire once: the measured exchange
// of the larger direction. (Charging each side the whole curve at its own rows
// predicted a cyclic(2) -> blocks of 1000 move, 4000-byte rows sent and 16-byte
// rows received, 1.5x slow.) T_memcpy = local copies. The footprint is that of a
// strategy that packs: the engine packs into and unpacks from MPI's buffers.
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, /*packs=*/true);
  Prediction p;
  p.comm = datatype_engine_time(rp.sends, rp.elem_size, rt, m) +
           datatype_engine_time(rp.receives, rp.elem_size, rt, m) +
           std::max(message_time(rp.sends, m), message_time(rp.receives, m));
  p.memcpy = local_copy_time(rp, rt);
  return p;
}

}  // namespace

StrategyEntry alltoallw_strategy() {
  StrategyEntry e =
      entry<Alltoallw>("alltoallw", "MPI derived datatypes straight from/to user memory, no packing", predict);
  e.extra_bytes = [](const RankPlan&, index_t, bool) { return index_t{0}; };  // no packed buffers (the fallback packs)
  return e;
}

}  // namespace redist::detail
