// What a rank needs to copy its target segments straight from a sender's memory
// (`direct` through process_vm_readv, `shm` through shared windows): where every
// segment lives in the sender's storage, told once per plan.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

// A segment's record as its sender sends it: block, offset, run, step[2],
// strides[ndim]. The sender's and the reader's segments of a peer correspond one
// to one (same shape and counts: plan_rank splits them alike on both sides).
inline size_t record_size(int ndim) { return static_cast<size_t>(5 + ndim); }
// Elements of a segment's run contiguous in both storages: the shorter of the
// two sides' runs (each a product of leading extents, so the shorter one is
// contiguous on both). `w`: the sender's record of the run.
inline index_t run_both(const Segment& s, const std::int64_t* w) { return std::min<index_t>(s.run, w[2]); }
// The source's view of a receive segment from the sender's record: its address
// (block, offset), strides and steps; shape and counts are the receiver's.
struct SenderView {
  std::int64_t block, offset;
  std::array<index_t, 2> step;
  Coord strides;
};
SenderView sender_view(const std::int64_t* w, int ndim);
// How many storage blocks (0 .. the largest used) a peer's records name, and
// this rank's own segments use.
std::int64_t record_blocks(const std::vector<std::int64_t>& records, int ndim);
std::int64_t segment_blocks(const std::vector<Segment>& segments);

// Collective over the plan's peers that take part (`with[rank]` true on both
// sides). Senders tell (the default): each sender sends each such receive peer
// the records of its segments (where they are in the source); returned per
// receive peer, in rp.receives order. Receivers tell: each receiver sends each
// such sender the records of its segments (where they go in the target);
// returned per send peer, in rp.sends order. Empty for the peers not taking part.
enum class Teller { senders, receivers };
std::vector<std::vector<std::int64_t>> exchange_records(PlanCore& p, const std::vector<char>& with, int tag,
                                                        Teller who = Teller::senders);

// The order in which this rank takes its peers (Walker & Otto, paper 001): from
// the rank after its own, wrapping around, so that in an all-to-all every step
// pairs each rank with a different one. If every rank began with the lowest
// rank, all of them would read from (or write into) its memory at once.
// Indices into `peers`.
std::vector<size_t> from_next(const std::vector<PeerPlan>& peers, int rank, int size);

}  // namespace redist::detail
