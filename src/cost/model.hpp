// Building blocks of the strategies' cost models (paper 000 sec. 7, Eq. 1-5;
// paper 002 Eq. 1): row-copy rates read from the calibrated curves, and the
// per-side sums every model needs. Each strategy's own formula sits beside its
// code (src/exec/strategies/*.cpp) and is put together from these.
#pragma once

#include <vector>

#include "redist/cost.hpp"

namespace redist::detail {

// A copy of `rows` rows of `row_bytes` contiguous bytes; `cross`: a transpose
// the kernel walks in blocks (loops_of), elements of `elem_bytes` each read
// along one side's rows and written along the other's.
struct Runs {
  double row_bytes, rows;
  bool cross = false;
  double elem_bytes = 0;
};
// The rows a copy kernel moves for a run (kernels/copy.hpp, run_rows): a
// segment's longest contiguous run is one row, and repetitions adjacent on both
// sides merge. A Segment is copied to or from a packed buffer, a LocalCopy
// between two storages.
Runs runs_of(const Segment& s, index_t es);
Runs runs_of(const LocalCopy& c, index_t es);

// Seconds per byte at a row size: the cache-resident and the from-memory curves
// blended by the rank's footprint (bytes it touches per execute), in log scale.
struct Rate {
  const Curve* large;
  const Curve* small;
  double w;  // 1: all from memory
  double fallback;
  // Transposed copies (Runs::cross), by element bytes; null or empty: at()
  // at one element's row.
  const Curve* cross_large = nullptr;
  const Curve* cross_small = nullptr;
  double at(double row) const;
  double across(double elem_bytes) const;  // seconds per byte of a transposed copy
  double time(Runs r) const {
    return r.rows * r.row_bytes * (r.cross ? across(r.elem_bytes) : at(r.row_bytes));
  }
};

struct Rates {
  Rate copy;      // memcpy of rows into or out of a packed buffer
  Rate datatype;  // rows moved by MPI's datatype engine between two ranks
  Rate vm;        // rows read with process_vm_readv (always from memory)
};
// `packs`: the strategy also writes and reads packed buffers (a larger footprint).
Rates rates(const RankPlan& rp, const Machine& m, bool packs);

// Seconds of this rank's local copies (source and target on this rank).
double local_copy_time(const RankPlan& rp, const Rates& rt);
// Seconds to pack (or unpack) every segment of `peers` with memcpy.
double pack_time(const std::vector<PeerPlan>& peers, index_t es, const Rates& rt);
// T_memcpy of the strategies that pack: pack what is sent, unpack what is
// received, copy the local pieces.
inline double packed_copy_time(const RankPlan& rp, const Rates& rt) {
  return pack_time(rp.sends, rp.elem_size, rt) + pack_time(rp.receives, rp.elem_size, rt) + local_copy_time(rp, rt);
}
// A peer's message as one run of this rank's storage: its segments, in the
// order they are packed, each one contiguous row in storage (run_rows: its
// elements in packed order are adjacent there) and each beginning where the one
// before ended, all in one block. `block` -1: not one run. p2p sends such a
// message straight from the source and receives it straight into the target
// (rank 0's 4000^2 array to rank 1: one message of 128 MB, no packing).
struct StorageRun {
  index_t block = -1, offset = 0;  // the block and the message's first element in it
};
StorageRun storage_run(const PeerPlan& pp);
// Is segment `g` one contiguous row of storage, its elements in packed order
// adjacent there (run_rows)? `segment` sends and receives such a one in place.
bool one_run(const Segment& g);
// The bytes of each message this rank packs or unpacks: those that are not one
// run of storage, sends then receives; under Options::arithmetic (`arithmetic`)
// every received one (all are unpacked). p2p_packed_bytes: their sum, the packed
// buffer of p2p and phased_unsync; p2p_pipelined's slots follow them.
std::vector<index_t> packed_messages(const RankPlan& rp, bool arithmetic);
index_t p2p_packed_bytes(const RankPlan& rp, bool arithmetic);
// The same for one side of `segment`, per segment; with `all` (a receive side
// under Options::arithmetic) every one.
index_t segment_packed_bytes(const std::vector<PeerPlan>& peers, index_t elem_size, bool all = false);
// The largest message of `peers` that is not one run of storage (every one with
// `all`), 0 when none: phased's round buffers.
index_t largest_packed_message(const std::vector<PeerPlan>& peers, bool all = false);
// packed_copy_time without the segments that are one run (segment's messages:
// one per segment), on either side. The models do not see Options::arithmetic,
// under which received ones are unpacked after all.
double segment_copy_time(const RankPlan& rp, const Rates& rt);
// packed_copy_time without the packing of messages that are one storage run
// (sent from the source), nor the unpacking of those received (into the target;
// as segment_copy_time, without Options::arithmetic).
double p2p_copy_time(const RankPlan& rp, const Rates& rt);
// Seconds of one message per peer, both directions at once (the measured exchange).
double message_time(const std::vector<PeerPlan>& peers, const Machine& m);
// Runs of `peers` (plan entries: messages, for one message per run).
index_t segment_count(const std::vector<PeerPlan>& peers);
// Seconds MPI's datatype engine adds to one side of messages described by
// derived datatypes (rows of `peers` read or written in place): half of what the
// `datatype` curve has beyond a contiguous exchange, at the side's own rows
// (alltoallw, phased_dt).
double datatype_engine_time(const std::vector<PeerPlan>& peers, index_t es, const Rates& rt, const Machine& m);
// A box of one storage that a copy reads or writes (a segment, one side of a
// local copy), for the models of copies that walk a storage in its order.
struct StoragePiece {
  Coord shape;
  index_t run = 0;  // elements contiguous in storage (Segment::run)
  Address at;
};
// The pieces of a run of segments (Segment::count, ::step), one per repetition.
void add_pieces(const Coord& shape, index_t run, const Address& at, const std::array<index_t, 2>& count,
                const std::array<index_t, 2>& step, std::vector<StoragePiece>& out);
// The rows a walk of `pieces` in storage order reads or writes without a gap:
// sorted by place, a piece that begins where the one before it ended (one
// block, as many rows at the same strides) lengthens their rows, and a stretch
// whose rows are as long as their stride is one row along that dimension (the
// columns of a ScaLAPACK local array that the walk takes whole). row[i]: the
// elements of piece i's merged row; rows: the merged rows in all. Cost
// O(n log n) for n pieces.
struct Stretches {
  std::vector<index_t> row;
  index_t rows = 0;
};
Stretches merge_stretches(const std::vector<StoragePiece>& pieces);

// Seconds per message in a stream with `in_flight` messages in flight each way.
double stream_cost(const Machine& m, index_t in_flight);

}  // namespace redist::detail
