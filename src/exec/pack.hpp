// Copies every message-based strategy shares: local pieces, packing a peer's
// segments into its message and unpacking a message into the target. A copy
// phase streams (kernels/copy.hpp, kStreamAbove) when the whole phase of this
// execute is large: all local copies, all packing, all unpacking of this rank.
#pragma once

#include "cost/model.hpp"
#include "exec/strategy.hpp"

namespace redist::detail {

// Packs one run (its segments one after another, each column-major) from its
// place `from` in storage into `buf`; unpack_run is the reverse.
// `a`: the plan's Options::arithmetic, applied while unpacking (null or the
// identity: a plain copy).
void pack_run(const Segment& s, const std::byte* from, std::byte* buf, index_t es, bool stream);
void unpack_run(const Segment& s, const std::byte* buf, std::byte* to, index_t es, bool stream,
                const Arithmetic* a = nullptr);
// The plan's arithmetic when there is any to do, else null.
inline const Arithmetic* arithmetic_of(const PlanCore& p) {
  return p.options.arithmetic.identity() ? nullptr : &p.options.arithmetic;
}
// Copies this rank's local pieces (source and target both here), with the plan's arithmetic.
void copy_locals(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst);
// One of them, rp.locals[k] (`stream`: stream_for of all of them; the caller fences).
void copy_local(const PlanCore& p, size_t k, const SrcBlocks& src, const DstBlocks& dst, bool stream);
// Elements [a, b) of it, in its packed order (its pieces one after another, each
// column-major): a long local copy done a part at a time.
void copy_local_range(const PlanCore& p, size_t k, index_t a, index_t b, const SrcBlocks& src, const DstBlocks& dst,
                      bool stream);
// The local copies a part at a time, to fill a wait (shm's rings,
// p2p_pipelined's slots): each step() copies at most `part` elements (streamed
// when all the local copies make a large phase: the caller fences at the end),
// false when none are left. `first`: the first local piece to copy
// (locals.size(): none).
class LocalParts {
 public:
  LocalParts(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst, index_t part, size_t first = 0);
  bool step();
  bool stream() const { return stream_; }

 private:
  const PlanCore& p_;
  const SrcBlocks& src_;
  const DstBlocks& dst_;
  index_t part_;
  bool stream_;
  size_t next_;
  index_t at_ = 0;  // elements of locals[next_] done
};
// Packs the segments sent to peer `i` of rp.sends into `buf`, one after another.
void pack_peer(const PlanCore& p, int i, const SrcBlocks& src, std::byte* buf);
// Unpacks the message of peer `i` of rp.receives from `buf` into the target, with
// the plan's arithmetic.
void unpack_peer(const PlanCore& p, int i, const std::byte* buf, const DstBlocks& dst);

// Messages that are one run of storage (cost/model.hpp, storage_run), per send
// (receive) peer of rp: sent from the source, received into the target as they
// are. A receive with the plan's arithmetic is not one (it is unpacked).
std::vector<StorageRun> send_runs(const PlanCore& p);
std::vector<StorageRun> receive_runs(const PlanCore& p);
// Where each peer's message lies in a packed buffer of `peers` (`total` bytes):
// one after another, those that are one run of storage (`runs`) left out (offset
// 0: they take no room).
std::vector<index_t> packed_offsets(const std::vector<PeerPlan>& peers, const std::vector<StorageRun>& runs,
                                    index_t& total);
// Where send peer i's message starts: in the source when `run` is one, else in
// `packed`, packed there now (pack_peer).
const std::byte* message_out(const PlanCore& p, int i, const SrcBlocks& src, const StorageRun& run, std::byte* packed);
// Where a receive peer's message lands: in the target when `run` is one (then
// nothing is to unpack), else in `packed`.
std::byte* message_in(const PlanCore& p, const DstBlocks& dst, const StorageRun& run, std::byte* packed);

// A piece of a message (plan/pieces.hpp): bytes [off, off + n) of the message to peer `i` of
// rp.sends, in the order pack_peer writes them, packed into `buf` (off and n
// multiples of the element size); nothing is allocated. What
// `phased` sends under a memory budget (Options::max_buffer_bytes).
void pack_peer_range(const PlanCore& p, int i, const SrcBlocks& src, index_t off, index_t n, std::byte* buf);
// The reverse for peer `i` of rp.receives, with the plan's arithmetic.
void unpack_peer_range(const PlanCore& p, int i, const std::byte* buf, index_t off, index_t n, const DstBlocks& dst);
// The same two with streaming stores chosen by the caller (above: stream_for(n)).
// `p2p_pipelined` packs its small slots without them (a slot stays in the caches
// for MPI to read) and unpacks a large message's pieces with them.
void pack_peer_range(const PlanCore& p, int i, const SrcBlocks& src, index_t off, index_t n, std::byte* buf,
                     bool stream);
void unpack_peer_range(const PlanCore& p, int i, const std::byte* buf, index_t off, index_t n, const DstBlocks& dst,
                       bool stream);

}  // namespace redist::detail
