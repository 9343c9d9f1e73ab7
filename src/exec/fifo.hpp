// Rings in shared memory between two ranks of a node: `shm`'s `fifo` path for
// pairs whose arrays are not in shared windows (memory the user allocated,
// docs/shm.md). The sender packs its rows into a slot of the ring, the receiver
// unpacks the slot into its target: a ring of kFifoSlots slots of at most
// kFifoSlotBytes. Small messages stay in the caches between the two copies;
// from 4 MB sent the ranks time their executes to choose whether the slots are
// written with streaming stores and read back from memory, or stay in the
// packing core's caches (SlotChoice: lines handed from one core's cache to the
// other's ran 2-4x slower on this VM's slow level, and 10-30% faster than
// memory on its fast one).
//
// Why not cross-memory attach (exec/cma.hpp) alone: the kernel pins every 4 KB
// page of the remote side apart. Issue 14's case a on the heap (8000^2 doubles,
// 2 ranks, 1.6 KB rows): the receiver reading took 60-64 ms, the sender writing
// 38-39 ms, alltoallw (Open MPI's own copy-in/copy-out) 34 ms, a copy program with
// such a ring 31-32 ms against 18 ms for one streaming copy of every target byte.
//
// Once per plan (collective over the pairs that take part): each receiver
// creates one POSIX shared-memory object holding a ring per sender, tells each
// sender its name and place; the sender maps its ring and says whether it could;
// the receiver then unlinks the name (the mappings stay until the plan goes).
// Per execute, no message: head and tail counters in the ring (the sender's
// release of a slot after packing it, the receiver's after unpacking it) are the
// only synchronization. They only grow, across executes: each execute moves the
// pair's bytes in the same number of slots on both sides.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

inline constexpr int kFifoSlots = 4;
inline constexpr index_t kFifoSlotBytes = index_t{64} << 10;
// A pair whose rows (contiguous in the source and the target) average
// kWalkRowMin..kWalkRowMax bytes, at most kSourceOrderRows of them, goes in its
// sender's source order (below): there the sender's walk of its source fills the
// ring beside its local copies (shm.cpp; docs/shm.md "One walk for the rings").
inline constexpr index_t kWalkRowMin = 256, kWalkRowMax = index_t{64} << 10;
inline constexpr index_t kSourceOrderRows = index_t{1} << 20;
// Whether a pair's rows suit source order: their count and mean, as above.
// `where`: for a receiver, the sender's records of where each segment lies in
// its source (exec/remote.hpp; rows contiguous on both sides); null: the
// segments' own side (a sender, or shm's model of either side).
bool source_order_suits(const std::vector<Segment>& segs, const std::vector<std::int64_t>* where, int ndim,
                        index_t bytes);

// Does column order write whole columns into this receiver's target (its
// receive segments from one sender)? Some run is a 2-D box repeated down
// (count[0] > 1) over several columns, and the runs that hold their repetitions
// one below the other (step[0] = the box's height, columns contiguous) hold at
// least 3/4 of such runs' elements: a ragged last row of tiles (2000 rows in
// tiles of 30: 20 rows, its run repeated across) no longer keeps the other 33
// rows of tiles in the plan's order.
bool columns_help(const std::vector<Segment>& segs);
// Does a sender read its source along columns when it packs in column order
// (its send segments to that receiver)? Not where a region permutes dimensions
// (Region::axes: the source's dimension 0 at a stride): a target column is
// then a source row, element by element across lines, where the plan's order
// copies box by box (a 400-tile 8000^2 transpose on grid 2x1 ran 1.3-1.8x slower
// in column order, 30 Nov); such a sender keeps the plan's order.
bool columns_read_along(const std::vector<Segment>& segs);

// $REDIST_SHM_FIFO=0 turns the rings off (shm's heap pairs then take
// cross-memory attach, as before them): read when a plan sets its rings up.
bool fifo_disabled();
// Slots written with streaming stores or not, as $REDIST_FIFO_STREAM forces it:
// 0 never, 1 always (tests, measurements), -1 unset (a rank that sends fewer
// than kStreamAbove bytes in an execute writes them with ordinary stores, one
// that sends more chooses by timing: SlotChoice). Read per execute
// (Fifos::begin).
int fifo_stream_forced();
// Payload bytes per slot at most: kFifoSlotBytes; $REDIST_FIFO_SLOT_BYTES
// (1..kFifoSlotBytes) makes it smaller, for tests (slots end inside rows and
// boxes, the ring wraps many times per execute, the local copies are cut).
index_t fifo_slot_limit();
// Bytes of shared memory (/dev/shm) a receiver maps for the ring of one sender
// whose message is `bytes` long (elements of `es` bytes): what setup reserves.
index_t fifo_ring_bytes(index_t bytes, index_t es);

// How the ranks that send at least kStreamAbove bytes through their rings write
// the slots, chosen by timing their executes (docs/shm.md "Slots by timing").
// Written with ordinary stores, a slot sits in the packing core's caches and the
// unpacking core fetches it from there; streamed, it goes to memory and is read
// from there. Which is faster follows the machine: this VM hands lines between
// its two cores at one of two speeds, minutes at a time; on the slow one
// streamed slots took 2-4x less time (issue 14's cases a, c, d on the heap,
// 28 Nov), on the fast one ordinary stores took 10-30% less (a, c, d, e, 30 Nov).
// Execute n (counted alike on every rank: executes are collective) streams when
// n = 0 (first touch; not timed); n = 1..kTrials alternate, ordinary stores
// first; then the chosen mode runs, and one execute explores the other: at
// kExplore, then at gaps that double while the choice stands (at most
// kExploreMax: on the slow level an exploration of ordinary stores costs an
// execute 2-4x slower) and fall back to kExplore when it changes. After the
// trials and after each exploration the ranks compare (decide(), collective):
// each mode's estimate, the slowest rank's (the execute waits for it), and the
// lower one is chosen. A rank's estimate of a mode: the lower of its two trials,
// then the moving average of its executes in that mode (weight 1/4), an
// exploration's time replacing it (an estimate from another level of the machine
// says nothing).
class SlotChoice {
 public:
  static constexpr std::int64_t kTrials = 4, kExplore = 64, kExploreMax = 1024;
  // The mode of execute n: true = streaming stores.
  bool mode(std::int64_t n) const;
  // This rank's time of its rings in execute n (begin to the end of finish),
  // which ran mode(n).
  void record(std::int64_t n, double seconds);
  // Whether the ranks compare their estimates after execute n.
  bool decides_after(std::int64_t n) const { return n == kTrials || n == next_; }
  // The choice after execute n from every rank's estimates: `slowest` the largest
  // of each mode's (ordinary, streamed; 0 where no rank timed it).
  void decide(std::int64_t n, const double slowest[2]);
  // This rank's estimate of a mode in seconds (0: none yet), the choice now, and
  // the execute that explores next.
  double estimate(bool streamed) const { return est_[streamed ? 1 : 0]; }
  bool streamed() const { return chosen_; }
  std::int64_t next_exploration() const { return next_; }

 private:
  double est_[2] = {0, 0};
  bool chosen_ = true;
  std::int64_t next_ = kExplore, gap_ = kExplore;
};

class Fifos {
 public:
  Fifos() = default;
  Fifos(const Fifos&) = delete;
  Fifos& operator=(const Fifos&) = delete;
  ~Fifos();

  // Collective over the pairs that take part: recv_with[i] per receive peer,
  // send_with[i] per send peer, true on both sides of a pair. Afterwards
  // recv_ok(i) / send_ok(i) say whether the pair's ring exists (the same on both
  // sides); why_not() says why a receiver's rings could not be made.
  // src_where[i]: receive peer i's records of where its segments lie in its
  // source (exec/remote.hpp; empty for peers not on the node): a receiver needs
  // them to ask for the sender's source order.
  void setup(PlanCore& p, const std::vector<char>& recv_with, const std::vector<char>& send_with,
             const std::vector<std::vector<std::int64_t>>& src_where, int tag);
  bool recv_ok(size_t i) const { return i < recv_.size() && recv_[i].slots != nullptr; }
  bool send_ok(size_t i) const { return i < send_.size() && send_[i].slots != nullptr; }
  // Does receive pair i's ring carry its runs in column order, or in its sender's
  // source order (below)?
  bool recv_columns(size_t i) const { return i < rsegs_.size() && !rsegs_[i].empty(); }
  bool recv_source_order(size_t i) const { return i < rrows_.size() && !rrows_[i].empty(); }

  // A row of a pair in source order: `bytes` at (block, off) in this side's
  // storage (the sender's source, the receiver's target), at `msg` in the message.
  struct MsgRow {
    std::int64_t off, msg, bytes;
    std::int64_t block;
  };
  // Send pair i's rows in its message's order (its source order), or null when
  // the pair goes by segments (the plan's order or column order).
  const std::vector<MsgRow>* send_rows(size_t i) const {
    return i < srows_.size() && !srows_[i].empty() ? &srows_[i] : nullptr;
  }
  const std::string& why_not() const { return why_not_; }

  // Moving an execute's pairs, those with recv_on[i] / send_on[i] (each must be
  // ok): begin() starts them; walked[i] (empty: none) says the caller fills send
  // pair i's slots itself through claim() and commit(), in message order (shm's
  // walk of its source in storage order, docs/shm.md "One walk for the rings").
  // poll() makes one pass over the pairs (packs the sends not walked, unpacks
  // every receive whose slots are full) and says whether a slot moved; wait() is
  // what a rank does when nothing moved (spins, then yields the core and lets MPI
  // progress). finish() moves the rest until every pair is through (the walked
  // ones must be); between polls, when no ring can move, `idle` is called (it
  // returns false when it has nothing left to do; the caller's local copies).
  // `execute`: the plan's count of shm executes before this one (SlotChoice).
  void begin(const PlanCore& p, const std::vector<char>& recv_on, const std::vector<char>& send_on,
             const std::vector<char>& walked, std::int64_t execute);
  bool poll(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst);
  void wait(const PlanCore& p);
  void finish(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst, const std::function<bool()>& idle);
  // Send pair i's next slot to fill, or null while the receiver has not emptied
  // one; its payload bytes; the message bytes released so far (the slot's first
  // byte in the message). commit() releases it with n bytes (the slot's size, or
  // what is left of the message).
  std::byte* claim(size_t i);
  // Whether slots are written with streaming stores in this execute (the
  // caller's too): commit() fences them.
  bool stream_slots() const { return stream_slots_; }
  // Whether this rank's slot mode is chosen by timing (it sends at least
  // kStreamAbove bytes, nothing forces it), and the choice so far.
  bool slots_timed() const { return timed_; }
  const SlotChoice& slot_choice() const { return slots_; }
  // Collective over p.comm after execute n where slot_choice().decides_after(n)
  // (alike on every rank): the ranks' estimates compared (every rank calls it,
  // with rings or not).
  void decide_slots(const PlanCore& p, std::int64_t n);
  index_t slot_bytes(size_t i) const { return send_[i].slot_bytes; }
  index_t sent(size_t i) const { return scur_[i].done; }
  void commit(size_t i, index_t n);
  // Send pair i's message order (segments one after another, as packed).
  const std::vector<Segment>& send_order(const PlanCore& p, size_t i) const { return send_segments(p, i); }

 private:
  struct Ring {
    std::byte* map = nullptr;  // the mapping (the receiver's: its whole object)
    size_t map_bytes = 0;
    std::byte* slots = nullptr;
    std::uint64_t* head = nullptr;  // slots filled (written by the sender)
    std::uint64_t* tail = nullptr;  // slots emptied (written by the receiver)
    std::uint64_t mine = 0;         // this side's counter (head as sender, tail as receiver)
    index_t slot_bytes = 0;         // payload per slot, a multiple of the element size
    index_t slot_stride = 0;        // bytes between slots
  };
  // Moves what it can through one ring: true when it moved a slot.
  bool pack_some(const PlanCore& p, size_t i, const SrcBlocks& src);
  bool unpack_some(const PlanCore& p, size_t i, const DstBlocks& dst, bool stream);

  // A pair's message order. The plan's: each run's segments one after another,
  // each column-major. Column order, where the receiver asks for it and both
  // sides hold the pair's runs alike (the same shapes and counts: a signature
  // travels with the offer): a 2-D run of count[0] > 1 repetitions down its
  // columns is sent column by column, the repetitions of one column together
  // (as segments of one column each: column_order()). When the target holds the
  // repetitions one below the other, the receiver then writes whole columns:
  // issue 14's case d, 80-byte rows that make 8 KB target columns, unpacked
  // as such (docs/shm.md). Empty: the plan's list; $REDIST_FIFO_COLUMNS=0 keeps
  // the plan's order everywhere, source order (below) too (tests, measurements).
  std::vector<std::vector<Segment>> rsegs_, ssegs_;
  // Source order, where the receiver asks for it (the pair's rows average
  // kWalkRowMin..kWalkRowMax bytes, at most kSourceOrderRows, no arithmetic) and
  // the sender agrees: the message holds the pair's elements by their place in
  // the sender's source (block, then offset), whatever the plan's runs. Both
  // sides can list that order: the receiver knows where each of its segments
  // lies in the sender's source (src_where). Each side keeps its rows (merged
  // where adjacent on both of its sides) with their place in the message; a
  // ragged last row of tiles, or a region at an offset, whose runs come after
  // the others in the plan's message, is then walked with the rest. Empty: by
  // segments.
  std::vector<std::vector<MsgRow>> rrows_, srows_;
  const std::vector<Segment>& recv_segments(const PlanCore& p, size_t i) const;
  const std::vector<Segment>& send_segments(const PlanCore& p, size_t i) const;

  std::vector<Ring> recv_, send_;
  std::byte* own_map_ = nullptr;  // the receiver's object, mapped once
  size_t own_bytes_ = 0;
  std::string why_not_;
  // Per execute: bytes moved so far per pair, and where the walk of the pair's
  // segments stands (the segment reached and its first byte in the message).
  struct Cursor {
    index_t done = 0, total = 0, base = 0;
    size_t seg = 0;  // the segment reached, or the row (source order)
  };
  std::vector<Cursor> rcur_, scur_;
  std::vector<char> walked_;  // per send pair: filled by the caller (begin)
  size_t left_ = 0;           // pairs not through
  bool stream_ = false;       // unpack with streaming stores
  bool stream_slots_ = false; // pack with streaming stores (fifo_stream_forced, slots_)
  bool timed_ = false;        // this execute's mode came from slots_: time it
  std::int64_t execute_ = 0;  // the execute begun
  std::chrono::steady_clock::time_point began_;
  SlotChoice slots_;
  int spins_ = 0;
};

}  // namespace redist::detail
