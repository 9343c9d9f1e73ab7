// `shm`: single-copy transfers between ranks of one node through MPI-3 shared
// windows (include/redist/shm.hpp, docs/shm.md): every remote byte is copied once,
// straight from the source rank's memory into the target rank's, with no packing
// and no message carrying data.
//
// Per execute, the two ranks of each pair on the node exchange headers: the
// sender says where its source blocks are in shared windows, the receiver where
// its target blocks are (window serial, member, offset, bytes, found in the
// registry of shared_allocate), or that they are not in a window the other can
// map. The headers are also the synchronization "sources ready, targets ready".
// Then, per pair:
//   push     the target is in a window: the sender writes it. Every sender walks
//            its own source once, in storage order, writing each row to whichever
//            target it belongs to (its own or a peer's): reads are sequential even
//            when the rows of one column go to several ranks (reading every other
//            1.6 KB row of a column ran at half the speed: the prefetchers fetch
//            the gaps). Then a zero-byte "done" to the receiver.
//   pull     the source only is in a window: the receiver reads it, then "done".
//   cma      neither (memory the user allocated), the peer on the node:
//            cross-memory attach (exec/cma.hpp); the block addresses come with
//            the header. The side of the pair with fewer runs is the remote one
//            (the kernel pins each remote iovec's pages apart): the receiver
//            reads the sender's source (process_vm_readv, as `direct`; rows
//            shorter than kCmaPackBelow packed by the sender, which then sends
//            the packed run's address), or the sender writes the receiver's
//            target (process_vm_writev; rows shorter than kCmaWritePackBelow
//            packed first); "done" from whoever moved the bytes.
//   fifo     neither (the default for such pairs): the sender packs its rows into
//            a ring of a few slots in shared memory, the receiver unpacks them
//            (exec/fifo.hpp): two copies, the bytes in the caches between them;
//            no message, the ring's counters are the synchronization. Faster
//            here than cross-memory attach, whose kernel pins every 4 KB page
//            ($REDIST_SHM_FIFO=0 or a ring that cannot be made: cma). Where a
//            ring's message follows the sender's source and its rows are 256 B
//            to 64 KB, the sender's walk of its source in storage order (as
//            push's) fills the ring's slots beside its local copies: one pass
//            over the source instead of two reading with gaps. From 4 MB sent
//            the slots are written with streaming stores (to memory: lines
//            handed between two cores were 2-3x slower on this VM's slow level).
//   message  neither, and cross-memory attach refused for the pair (probed once
//            per plan by the receiver, which tells the sender: $REDIST_CMA=0, a
//            failed probe read, Options::arithmetic), or the peer is on another
//            node (node size: Options::node_size, $REDIST_NODE_SIZE): packed and
//            sent, as p2p.
// Both sides of a pair know both headers and the pair's probe outcome, so they
// decide the same path; describe() names each peer's path and why.
// No two senders write one target element (the plan gives each exactly one
// source), so writes need no locks. Options::arithmetic (beta reads the target)
// is applied by whoever copies into the target (push is not taken with it).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "cost/model.hpp"
#include "exec/cma.hpp"
#include "exec/fifo.hpp"
#include "exec/pack.hpp"
#include "exec/remote.hpp"
#include "exec/shm_window.hpp"
#include "exec/threads.hpp"
#include "kernels/arith.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr int kTagSrcWhere = 21, kTagDstWhere = 22, kTagSource = 23, kTagTarget = 24, kTagDone = 25, kTagData = 26,
              kTagCma = 27, kTagPackFlags = 28, kTagPacked = 29, kTagCmaWrite = 30, kTagFifo = 31;
// A header: 1 when every block is in a window the peer can map, then per block
// (serial, member, offset, bytes, address in the process: the cma path's base).
constexpr size_t kPerBlock = 5;
enum Path : int { kPush, kPull, kFifo, kCma, kCmaWrite, kMessage };
// The sorted row walk of push is built with one 48-byte record per row: only
// when rows average at least this many bytes and there are at most kMaxRows of
// them (48 MB); else push goes segment by segment. Once sorted it is folded into
// groups (RowGroup), and only the groups' rows are kept.
constexpr index_t kSortRowsAbove = 64, kMaxRows = index_t{1} << 20;

// One row of the push walk: `bytes` from this rank's source to a target, or
// into a ring (dst_block kRingRow: dst_off is the row's first byte in the pair's
// message, the slots it fills follow from it).
struct Row {
  std::int64_t src_off, dst_off, bytes;  // byte offsets in their blocks
  std::int64_t dst_step;  // in a group (RowGroup): dst_off's move per repetition
  std::int32_t src_block, dst_block;
  std::int32_t target;  // -1: this rank's own target, else an index into rp.sends
  std::uint16_t flags;  // kChainedBefore | kChainedAfter
};

// The sorted walk folded: rows [first, first + period) of the kept rows,
// repeated `reps` times, repetition r at r * src_step further in the source and
// r * dst_step (each row's own) in its target. Case d's source columns, 80-byte
// rows going to two targets in turn, fold with period 2 until the target's
// column jumps: 200,000 records per rank (8 MB read beside 16 MB copied) become
// 202 groups. The copies and their order are the walk's, row for row.
struct RowGroup {
  std::int64_t first, period, reps, src_step;
  std::int64_t bytes;  // of one repetition (its period's rows)
};
constexpr std::int64_t kMaxPeriod = 8;
// A row is chained to the previous row of the walk that writes the same target
// block when that one ends where it starts and fewer than kChainGap bytes are
// written between the two (to other targets): the partial cache line where they
// meet is still in a write-combining buffer when the second completes it, so both
// can stream it (copy_row_chained). Case d's rows of 80 bytes alternate between
// two targets, each continuing the last one's row.
constexpr std::uint16_t kChainedBefore = 1, kChainedAfter = 2;
constexpr index_t kChainGap = 512;
constexpr std::int32_t kRingRow = -1;
// One walk for the rings (docs/shm.md): where the heap pairs go through rings,
// the walk of the source fills their slots too, row by row in storage order,
// beside the local copies; every kPollBytes walked it unpacks the receives'
// full slots (its peers' walks wait on them), and it cuts longer rows there.
// $REDIST_FIFO_WALK=0 leaves the rings to Fifos (each pair packed apart, the
// local copies while no ring can move): tests, measurements.
constexpr index_t kPollBytes = index_t{64} << 10;  // kWalkRowMin, kWalkRowMax: exec/fifo.hpp
bool fifo_walk_disabled() {
  return env_off("REDIST_FIFO_WALK");
}

class Shm final : public Strategy {
 public:
  explicit Shm(PlanCore& p) : Strategy(p) {}

  // Collective: node discovery and, with the peers on this rank's node, where
  // each side's segments live. Always available: peers it cannot map get messages.
  bool available() override;
  void run(const SrcBlocks& src, const DstBlocks& dst) override;
  std::string describe() const override;

 private:
  // Why receive pair i goes through cross-memory attach, not a ring.
  std::string cma_why(size_t i) const {
    if (pack_.recv_long[i])
      return cat("; runs of ", kCmaLongRun >> 10, " KiB or more on average on both sides, both ranks busy: one copy, "
                 "not a ring's two");
    return fifo_.why_not().empty() ? std::string() : cat("; no ring: ", fifo_.why_not());
  }
  bool header(const void* const* ptr, const LocalIndex& map, std::int64_t nblocks, int peer, std::vector<std::int64_t>& h);
  Path decide(std::int64_t source_ok, std::int64_t target_ok, bool fifo, int cma) const {
    if (target_ok && arithmetic_of(plan_) == nullptr) return kPush;
    return source_ok ? kPull : fifo ? kFifo : cma == kCmaOk ? kCma : kMessage;
  }
  void build_rows();
  void link_chains();
  void fold_rows();
  std::string resolve(const std::vector<std::int64_t>& h, std::int64_t nblocks, int peer, std::vector<std::byte*>& base);
  std::string push(const SrcBlocks& src, const DstBlocks& dst, bool rings);
  void walk(const SrcBlocks& src, const DstBlocks& dst, bool rings, index_t begin, index_t end);
  std::string pull(size_t i, const DstBlocks& dst);
  std::string cma_read(size_t i, const DstBlocks& dst);
  void cma_send(size_t i, const SrcBlocks& src);
  std::string cma_write(size_t i, const SrcBlocks& src);
  // Posts a send or a receive into sq_ (headers and "done"), named for errors.
  void post(bool send, void* buf, std::int64_t count, MPI_Datatype type, int peer, int tag);
  void send_message(size_t i, const SrcBlocks& src);
  void receive_message(size_t i, const DstBlocks& dst);

  std::vector<char> on_node_;  // per rank of the plan
  std::vector<int> world_;     // per rank of the plan: its rank in MPI_COMM_WORLD
  std::vector<std::vector<std::int64_t>> src_where_;  // per receive peer on the node: the sender's records
  std::vector<std::vector<std::int64_t>> dst_where_;  // per send peer on the node: the receiver's records
  std::vector<std::int64_t> recv_src_blocks_, recv_dst_blocks_, send_src_blocks_, send_dst_blocks_;
  std::vector<std::vector<std::int64_t>> src_in_, dst_out_;  // as receiver: the sender's header, mine
  std::vector<std::vector<std::int64_t>> src_out_, dst_in_;  // as sender: mine, the receiver's header
  std::vector<Path> recv_path_, send_path_;
  std::vector<size_t> send_order_, recv_order_;  // from_next: the peers from the next rank on
  std::vector<StorageRun> send_run_, recv_run_;   // per peer: a message that is one run of storage (exec/pack.hpp)
  // Cross-memory attach per pair on the node: the receiver's probe read and the
  // sender's probe write (kCmaOk or why not, exec/cma.hpp), known to both sides;
  // who moves the bytes and which segments travel packed; the packed runs'
  // addresses (sent per execute).
  std::vector<int> recv_cma_, send_cma_, recv_cma_write_, send_cma_write_;
  CmaPeers cma_peers_;
  CmaPacking pack_;
  CmaMover mover_;
  Fifos fifo_;
  std::vector<char> recv_fifo_, send_fifo_;  // per peer: its path is kFifo in this run
  std::vector<std::vector<std::uint64_t>> cma_base_;      // per receive peer: its source blocks' addresses
  std::vector<std::vector<std::uint64_t>> cma_base_out_;  // per send peer: its target blocks' addresses
  std::vector<std::uint64_t> packed_in_, packed_out_;
  std::vector<MPI_Request> packed_req_;  // per receive peer: the packed run's address
  bool stream_packed_in_ = false, stream_packed_out_ = false;
  std::vector<std::vector<std::byte*>> push_base_;  // per send peer: its target blocks, mapped here
  std::vector<Row> rows_;        // the groups' rows
  std::vector<RowGroup> groups_;  // the sorted walk, folded (empty: segment by segment)
  index_t walk_bytes_ = 0;        // the walk's bytes, its groups' repetitions all told
  int walk_parts_ = 1;            // the last run's walk: parts on threads of their own (copy threads)
  bool rows_built_ = false;
  size_t walk_rows_ = 0, walk_chained_ = 0;  // rows of the walk (merged), chained ones
  std::vector<char> rows_for_;  // send_fifo_ when the rows were built
  std::vector<char> walked_;    // per send peer: its ring's slots filled by the walk
  size_t walked_rings_ = 0;
  bool walk_ran_ = false;  // the last run walked the sorted rows
  std::int64_t executes_ = 0;  // runs so far, alike on every rank (the rings' SlotChoice)
  std::vector<std::byte*> slot_;  // per walked ring: the slot being filled (null: none)
  std::byte *rbuf_ = nullptr, *sbuf_ = nullptr;
  std::vector<index_t> pending_;  // per receive peer: data chunks in flight
  std::vector<MPI_Request> rq_, sq_;  // data receives; everything else
  std::vector<int> rpeer_;            // per data receive: its receive peer index
  std::vector<std::string> swhat_;
  std::vector<int> index_;
  std::vector<MPI_Status> status_;
};

bool Shm::available() {
  PlanCore& p = plan_;
  const std::vector<int>& leaders = p.node_of();  // node_leaders, shared with Plan::predictions
  const int leader = leaders[static_cast<size_t>(p.rank)];
  on_node_.resize(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) on_node_[static_cast<size_t>(r)] = leaders[static_cast<size_t>(r)] == leader;
  MPI_Group plan_group, world_group;
  check_mpi(MPI_Comm_group(p.comm, &plan_group), "MPI_Comm_group", p.comm);
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", p.comm);
  std::vector<int> ranks(static_cast<size_t>(p.size));
  for (int r = 0; r < p.size; ++r) ranks[static_cast<size_t>(r)] = r;
  world_.resize(static_cast<size_t>(p.size));
  check_mpi(MPI_Group_translate_ranks(plan_group, p.size, ranks.data(), world_group, world_.data()),
            "MPI_Group_translate_ranks", p.comm);
  check_mpi(MPI_Group_free(&plan_group), "MPI_Group_free", p.comm);
  check_mpi(MPI_Group_free(&world_group), "MPI_Group_free", p.comm);

  src_where_ = exchange_records(p, on_node_, kTagSrcWhere, Teller::senders);
  dst_where_ = exchange_records(p, on_node_, kTagDstWhere, Teller::receivers);
  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  for (size_t i = 0; i < nr; ++i) {
    recv_src_blocks_.push_back(record_blocks(src_where_[i], p.rp.ndim));
    recv_dst_blocks_.push_back(segment_blocks(p.rp.receives[i].segments));
  }
  for (size_t i = 0; i < ns; ++i) {
    send_src_blocks_.push_back(segment_blocks(p.rp.sends[i].segments));
    send_dst_blocks_.push_back(record_blocks(dst_where_[i], p.rp.ndim));
  }
  auto sized = [](const std::vector<std::int64_t>& nblocks) {
    std::vector<std::vector<std::int64_t>> v(nblocks.size());
    for (size_t i = 0; i < v.size(); ++i) v[i].resize(1 + kPerBlock * static_cast<size_t>(nblocks[i]));
    return v;
  };
  src_in_ = sized(recv_src_blocks_), dst_out_ = sized(recv_dst_blocks_);
  src_out_ = sized(send_src_blocks_), dst_in_ = sized(send_dst_blocks_);
  recv_path_.assign(nr, kMessage), send_path_.assign(ns, kMessage);
  send_order_ = from_next(p.rp.sends, p.rank, p.size), recv_order_ = from_next(p.rp.receives, p.rank, p.size);
  send_run_ = send_runs(p), recv_run_ = receive_runs(p);
  push_base_.resize(ns);
  pending_.assign(nr, 0);

  // Cross-memory attach: each receiver probes reading each sender on its node
  // once and tells it the outcome (so both sides of a pair decide alike), each
  // sender probes writing each receiver and tells it; then the receiver says who
  // moves the bytes and which segments travel packed.
  const int refused = cma_disabled() ? kCmaOff : arithmetic_of(p) ? kCmaArithmetic : kCmaOk;
  const PlanStats& st = p.rp.stats;  // the bytes this rank copies with every pair in a ring (kCmaLongRun)
  cma_peers_ = cma_peers(p.comm, st.bytes_local + st.bytes_sent + st.bytes_received);
  recv_cma_.assign(nr, kCmaOff), send_cma_.assign(ns, kCmaOff);
  recv_cma_write_.assign(nr, kCmaOff), send_cma_write_.assign(ns, kCmaOff);
  std::vector<MPI_Request> req;
  std::vector<std::string> role;
  for (size_t i = 0; i < nr; ++i) {
    const int peer = p.rp.receives[i].peer;
    if (!on_node_[static_cast<size_t>(peer)]) continue;
    recv_cma_[i] = refused != kCmaOk ? refused : cma_probe(cma_peers_, peer);
    req.emplace_back(), role.push_back(cat("send to rank ", peer));
    check_mpi(MPI_Isend(&recv_cma_[i], 1, MPI_INT, peer, kTagCma, p.comm, &req.back()), "MPI_Isend", p.comm, "send to",
              peer);
    req.emplace_back(), role.push_back(cat("receive from rank ", peer));
    check_mpi(MPI_Irecv(&recv_cma_write_[i], 1, MPI_INT, peer, kTagCmaWrite, p.comm, &req.back()), "MPI_Irecv",
              p.comm, "receive from", peer);
  }
  for (size_t i = 0; i < ns; ++i) {
    const int peer = p.rp.sends[i].peer;
    if (!on_node_[static_cast<size_t>(peer)]) continue;
    req.emplace_back(), role.push_back(cat("receive from rank ", peer));
    check_mpi(MPI_Irecv(&send_cma_[i], 1, MPI_INT, peer, kTagCma, p.comm, &req.back()), "MPI_Irecv", p.comm,
              "receive from", peer);
    send_cma_write_[i] = refused != kCmaOk ? refused : cma_probe(cma_peers_, peer, /*write=*/true);
    req.emplace_back(), role.push_back(cat("send to rank ", peer));
    check_mpi(MPI_Isend(&send_cma_write_[i], 1, MPI_INT, peer, kTagCmaWrite, p.comm, &req.back()), "MPI_Isend",
              p.comm, "send to", peer);
  }
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, [&](int k) { return role[static_cast<size_t>(k)]; });
  std::vector<char> recv_with(nr), send_with(ns), may_write(nr);
  for (size_t i = 0; i < nr; ++i) {
    recv_with[i] = on_node_[static_cast<size_t>(p.rp.receives[i].peer)] && recv_cma_[i] == kCmaOk;
    may_write[i] = recv_cma_write_[i] == kCmaOk;
  }
  for (size_t i = 0; i < ns; ++i)
    send_with[i] = on_node_[static_cast<size_t>(p.rp.sends[i].peer)] && send_cma_[i] == kCmaOk;
  pack_ = cma_packing(p, src_where_, recv_with, send_with, may_write, kTagPackFlags, &cma_peers_);
  index_t in = 0, out = 0;
  for (index_t b : pack_.recv_bytes) in += b;
  for (index_t b : pack_.send_bytes) out += b;
  stream_packed_in_ = stream_for(in), stream_packed_out_ = stream_for(out);
  cma_base_.resize(nr);
  cma_base_out_.resize(ns);
  packed_in_.assign(nr, 0), packed_out_.assign(ns, 0);
  packed_req_.assign(nr, MPI_REQUEST_NULL);

  // The rings of the fifo path, for every pair on the node but those whose runs
  // are long on both sides between two busy ranks (pack_.recv_long: one kernel
  // copy beats the ring's two); which pairs use them is known per execute, from
  // the headers.
  std::vector<char> recv_on(nr), send_on(ns);
  for (size_t i = 0; i < nr; ++i)
    recv_on[i] = on_node_[static_cast<size_t>(p.rp.receives[i].peer)] && !pack_.recv_long[i];
  for (size_t i = 0; i < ns; ++i) send_on[i] = on_node_[static_cast<size_t>(p.rp.sends[i].peer)] && !pack_.send_long[i];
  fifo_.setup(p, recv_on, send_on, src_where_, kTagFifo);
  recv_fifo_.assign(nr, 0), send_fifo_.assign(ns, 0);
  return true;
}

// Fills a header: whether blocks 0 .. nblocks-1 of this rank's storage (`map`)
// all lie in windows `peer` can map, and where.
bool Shm::header(const void* const* ptr, const LocalIndex& map, std::int64_t nblocks, int peer,
                 std::vector<std::int64_t>& h) {
  const int peer_world = world_[static_cast<size_t>(peer)];
  h[0] = 1;
  for (std::int64_t b = 0; b < nblocks; ++b) {
    const index_t bytes = map.block_elements(b) * plan_.rp.elem_size;
    const std::vector<int>* members = nullptr;
    WindowRef ref{0, 0, 0};
    if (bytes > 0) {
      ref = find_window(ptr[b], bytes, &members);
      if (ref.owner < 0 || std::find(members->begin(), members->end(), peer_world) == members->end()) h[0] = 0;
    }
    std::int64_t* at = &h[1 + kPerBlock * static_cast<size_t>(b)];
    at[0] = static_cast<std::int64_t>(ref.serial), at[1] = ref.owner, at[2] = ref.offset, at[3] = bytes;
    at[4] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(ptr[b]));
  }
  return h[0] == 1;
}

// The blocks a header names, mapped in this process.
std::string Shm::resolve(const std::vector<std::int64_t>& h, std::int64_t nblocks, int peer,
                         std::vector<std::byte*>& base) {
  base.assign(static_cast<size_t>(nblocks), nullptr);
  for (std::int64_t b = 0; b < nblocks; ++b) {
    const std::int64_t* at = &h[1 + kPerBlock * static_cast<size_t>(b)];
    if (at[3] == 0) continue;
    base[static_cast<size_t>(b)] = window_address({static_cast<std::uint64_t>(at[0]), at[1], at[2]}, at[3]);
    if (!base[static_cast<size_t>(b)])
      return cat("shm: rank ", peer, "'s block ", b, " is in a shared window this rank cannot map");
  }
  return {};
}

// The blocks a header names, as addresses in the peer's process (cma path).
void addresses(const std::vector<std::int64_t>& h, std::int64_t nblocks, std::vector<std::uint64_t>& base) {
  base.resize(static_cast<size_t>(nblocks));
  for (size_t b = 0; b < base.size(); ++b) base[b] = static_cast<std::uint64_t>(h[1 + kPerBlock * b + 4]);
}

// Push's rows, every local copy and every segment to a peer on the node, one
// record per contiguous row, sorted by their place in this rank's source. The
// segments of a pair that goes through a ring (send_fifo_) are rows into its
// message (kRingRow), in the ring's order: where that order is the source's
// (each row of the pair starts where the last one of the pair ended, the walk
// sorted), the walk fills the pair's slots (walked_); else the pair's rows are
// dropped and Fifos packs it.
void Shm::build_rows() {
  PlanCore& p = plan_;
  rows_built_ = true;
  rows_for_ = send_fifo_;
  rows_.clear(), groups_.clear();
  const size_t ns = p.rp.sends.size();
  walked_.assign(ns, 0);
  walked_rings_ = 0;
  const bool rings = !fifo_walk_disabled();
  const index_t es = p.rp.elem_size;
  const size_t per = record_size(p.rp.ndim);
  index_t rows = 0, bytes = 0;
  auto count = [&](const Coord& shape, index_t run, const std::array<index_t, 2>& c, const std::array<index_t, 2>& fstep,
                   const std::array<index_t, 2>& tstep) {
    const RunRows rr = run_rows(shape, run, c, fstep, tstep);
    rows += rr.rows, bytes += rr.rows * rr.row * es;
  };
  auto ring = [&](size_t i) { return rings && send_fifo_[i] && fifo_.send_ok(i) && arithmetic_of(p) == nullptr; };
  for (const LocalCopy& c : p.rp.locals) count(c.shape, c.run, c.count, c.from_step, c.to_step);
  for (size_t i = 0; i < ns; ++i) {
    if (!on_node_[static_cast<size_t>(p.rp.sends[i].peer)]) continue;
    if (ring(i)) {
      if (const auto* rows_in_order = fifo_.send_rows(i)) {
        rows += static_cast<index_t>(rows_in_order->size()), bytes += p.rp.sends[i].bytes;
        continue;
      }
      for (const Segment& s : fifo_.send_order(p, i)) count(s.shape, s.run, s.count, s.step, packed_steps(s.shape, s.count));
      continue;
    }
    for (size_t k = 0; k < p.rp.sends[i].segments.size(); ++k) {
      const Segment& s = p.rp.sends[i].segments[k];
      const SenderView v = sender_view(&dst_where_[i][k * per], p.rp.ndim);
      count(s.shape, run_both(s, &dst_where_[i][k * per]), s.count, s.step, v.step);
    }
  }
  if (rows == 0 || rows > kMaxRows || bytes < rows * kSortRowsAbove) return;
  rows_.reserve(static_cast<size_t>(rows));
  auto add = [&](std::int64_t sb, std::int64_t db, std::int32_t target) {
    return [&, sb, db, target](index_t from, index_t to, index_t row) {
      rows_.push_back({from, to, row, 0, static_cast<std::int32_t>(sb), static_cast<std::int32_t>(db), target, 0});
    };
  };
  for (const LocalCopy& c : p.rp.locals)
    for_each_row(c.shape, c.run, es, c.count, c.from.offset, c.from.strides, c.from_step, c.to.offset, c.to.strides,
                 c.to_step, add(c.from.block, c.to.block, -1));
  for (size_t i = 0; i < ns; ++i) {
    if (!on_node_[static_cast<size_t>(p.rp.sends[i].peer)]) continue;
    if (ring(i)) {
      if (const auto* rows_in_order = fifo_.send_rows(i)) {  // the ring in source order
        for (const Fifos::MsgRow& r : *rows_in_order)
          rows_.push_back({r.off, r.msg, r.bytes, 0, static_cast<std::int32_t>(r.block), kRingRow, static_cast<std::int32_t>(i), 0});
        continue;
      }
      index_t at = 0;  // the segment's first element in the message
      for (const Segment& s : fifo_.send_order(p, i)) {
        for_each_row(s.shape, s.run, es, s.count, s.at.offset, s.at.strides, s.step, at, packed_strides(s.shape),
                     packed_steps(s.shape, s.count), add(s.at.block, kRingRow, static_cast<std::int32_t>(i)));
        at += s.elements();
      }
      continue;
    }
    for (size_t k = 0; k < p.rp.sends[i].segments.size(); ++k) {
      const Segment& s = p.rp.sends[i].segments[k];
      const std::int64_t* w = &dst_where_[i][k * per];
      const SenderView v = sender_view(w, p.rp.ndim);
      for_each_row(s.shape, run_both(s, w), es, s.count, s.at.offset, s.at.strides, s.step, v.offset, v.strides, v.step,
                   add(s.at.block, v.block, static_cast<std::int32_t>(i)));
    }
  }
  std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
    return a.src_block != b.src_block ? a.src_block < b.src_block : a.src_off < b.src_off;
  });
  // Which rings the walk can fill: every row of the pair where the last ended.
  std::vector<std::int64_t> next(ns, 0);
  for (size_t i = 0; i < ns; ++i) walked_[i] = ring(i);  // a ring's peer is on the node
  for (const Row& r : rows_)
    if (r.dst_block == kRingRow) {
      const auto i = static_cast<size_t>(r.target);
      if (r.dst_off != next[i]) walked_[i] = 0;
      next[i] = r.dst_off + r.bytes;
    }
  // Rows adjacent in the source and in one target block merge (tiles of 100
  // rows into tiles of 300: one row of 300).
  size_t m = 0;
  for (size_t k = 0; k < rows_.size(); ++k) {
    Row& last = rows_[m > 0 ? m - 1 : 0];
    const Row& r = rows_[k];
    if (m > 0 && r.src_block == last.src_block && r.src_off == last.src_off + last.bytes && r.target == last.target &&
        r.dst_block == last.dst_block && r.dst_off == last.dst_off + last.bytes)
      last.bytes += r.bytes;
    else
      rows_[m++] = r;
  }
  rows_.resize(m);
  // The walk pays where a ring's rows alternate with other rows at gaps the
  // prefetchers fetch anyway (kWalkRowMin..kWalkRowMax bytes on average); rows
  // shorter share their lines (one walk reads no fewer), longer ones are read
  // whole either way, and there the ring moves faster packed on its own.
  std::vector<std::int64_t> nrows(ns, 0);
  for (const Row& r : rows_)
    if (r.dst_block == kRingRow) ++nrows[static_cast<size_t>(r.target)];
  for (size_t i = 0; i < ns; ++i) {
    const index_t mean = nrows[i] > 0 ? p.rp.sends[i].bytes / nrows[i] : 0;
    if (mean < kWalkRowMin || mean > kWalkRowMax) walked_[i] = 0;
  }
  // The rows of rings not walked go (Fifos packs them).
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(),
                             [&](const Row& r) { return r.dst_block == kRingRow && !walked_[static_cast<size_t>(r.target)]; }),
              rows_.end());
  walked_rings_ = static_cast<size_t>(std::count(walked_.begin(), walked_.end(), 1));
  if (walked_rings_ == 0 && std::find(send_path_.begin(), send_path_.end(), kPush) == send_path_.end()) {
    rows_.clear(), rows_.shrink_to_fit();  // no walk: the rings and local copies go as before
    return;
  }
  // Chains only without rings in the walk: beside a ring's ordinary stores they
  // ran slower (d, when its rings were walked: docs/shm.md).
  if (walked_rings_ == 0) link_chains();
  walk_rows_ = rows_.size();
  walk_chained_ = static_cast<size_t>(std::count_if(rows_.begin(), rows_.end(), [](const Row& r) { return r.flags != 0; }));
  fold_rows();
}

// Marks the rows chained to their neighbours in the walk (kChainGap above).
void Shm::link_chains() {
  struct Tail {
    size_t row;
    std::int64_t end;  // dst_off + bytes of that row
    index_t at;        // bytes the walk had written after it
  };
  std::unordered_map<std::uint64_t, Tail> tails;
  index_t at = 0;
  for (size_t k = 0; k < rows_.size(); ++k) {
    Row& r = rows_[k];
    const std::uint64_t key = (static_cast<std::uint64_t>(r.target + 1) << 32) | static_cast<std::uint32_t>(r.dst_block);
    auto it = tails.find(key);
    if (it != tails.end() && it->second.end == r.dst_off && at - it->second.at < kChainGap) {
      r.flags |= kChainedBefore;
      rows_[it->second.row].flags |= kChainedAfter;
    }
    at += r.bytes;
    tails[key] = {k, r.dst_off + r.bytes, at};
  }
}

// Folds the sorted walk into groups (RowGroup). From each row on, every period
// of at most kMaxPeriod rows is tried: its repetitions go on while each row is
// the one a period before, moved by the steps of the first repetition (blocks,
// target, length and chain flags alike). The period covering the most rows
// wins (the shortest of equals); a row that repeats nothing is a group of one.
// At most kMaxPeriod passes over the rows.
void Shm::fold_rows() {
  walk_bytes_ = 0;
  const auto n = static_cast<std::int64_t>(rows_.size());
  auto moved = [&](std::int64_t a, std::int64_t b, std::int64_t ds, std::int64_t dd) {  // rows_[b] is rows_[a] moved
    const Row &x = rows_[static_cast<size_t>(a)], &y = rows_[static_cast<size_t>(b)];
    return y.src_block == x.src_block && y.dst_block == x.dst_block && y.target == x.target && y.bytes == x.bytes &&
           y.flags == x.flags && y.src_off == x.src_off + ds && y.dst_off == x.dst_off + dd;
  };
  auto at = [&](std::int64_t k) -> const Row& { return rows_[static_cast<size_t>(k)]; };
  std::vector<Row> kept;
  for (std::int64_t k = 0; k < n;) {
    std::int64_t best = 1, best_reps = 1;
    for (std::int64_t q = 1; q <= kMaxPeriod && k + 2 * q <= n; ++q) {
      const std::int64_t ds = at(k + q).src_off - at(k).src_off;
      std::int64_t reps = 1;
      for (bool same = true; same && k + (reps + 1) * q <= n; reps += same) {
        for (std::int64_t j = 0; j < q && same; ++j)
          same = moved(k + j, k + reps * q + j, ds * reps, (at(k + q + j).dst_off - at(k + j).dst_off) * reps);
      }
      if (reps * q > best_reps * best) best = q, best_reps = reps;
    }
    groups_.push_back({static_cast<std::int64_t>(kept.size()), best, best_reps,
                       best_reps > 1 ? at(k + best).src_off - at(k).src_off : 0, 0});
    for (std::int64_t j = 0; j < best; ++j) {
      groups_.back().bytes += at(k + j).bytes;
      kept.push_back(at(k + j));
      kept.back().dst_step = best_reps > 1 ? at(k + best + j).dst_off - at(k + j).dst_off : 0;
    }
    k += best * best_reps;
    walk_bytes_ += groups_.back().bytes * best_reps;
  }
  rows_ = std::move(kept);
}

// This rank writes the targets of its push peers (and its own) from its source:
// the walk (with the rings it fills), or segment by segment where there is none.
std::string Shm::push(const SrcBlocks& src, const DstBlocks& dst, bool rings) {
  PlanCore& p = plan_;
  const index_t es = p.rp.elem_size;
  std::string err;
  for (size_t i = 0; i < p.rp.sends.size() && err.empty(); ++i)
    if (send_path_[i] == kPush) err = resolve(dst_in_[i], send_dst_blocks_[i], p.rp.sends[i].peer, push_base_[i]);
  if (!err.empty()) return err;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the headers before the targets' stores
  if (!groups_.empty()) {
    // Without rings the walk's bytes are cut into parts for the copy threads (a
    // ring's slots are filled in order, by one thread).
    walk_parts_ = rings ? 1 : copy_parts(p, walk_bytes_);
    for_parts(walk_parts_, [&](int t) {
      walk(src, dst, rings, part_begin(walk_bytes_, t, walk_parts_, p.rp.elem_size),
           part_begin(walk_bytes_, t + 1, walk_parts_, p.rp.elem_size));
    });
  } else {  // segment by segment (short rows, or many)
    const bool stream = stream_for(p.rp.stats.bytes_sent + p.rp.stats.bytes_local);
    copy_locals(p, src, dst);
    const size_t per = record_size(p.rp.ndim);
    for (size_t i : send_order_) {
      if (send_path_[i] != kPush) continue;
      for (size_t k = 0; k < p.rp.sends[i].segments.size(); ++k) {
        const Segment& s = p.rp.sends[i].segments[k];
        const std::int64_t* w = &dst_where_[i][k * per];
        const SenderView v = sender_view(w, p.rp.ndim);
        copy_run(s.shape, run_both(s, w), es, s.count, src.at(s.at, es), s.at.strides, s.step,
                 push_base_[i][static_cast<size_t>(v.block)] + v.offset * es, v.strides, v.step, stream);
      }
    }
    if (stream) stream_fence();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the targets' stores before "done"
  return {};
}

// The sorted walk, group by group: each row to this rank's target, a pushed
// peer's (its window, mapped here) or a walked ring's slot; the rows of peers
// that pull or take messages are skipped. With rings (fifo_.begin() called), the
// receives' full slots are unpacked every kPollBytes walked and whenever a
// ring has no free slot. Only bytes [begin, end) of the walk (its rows one
// after another): a part of it on a copy thread; with rings, the whole walk.
void Shm::walk(const SrcBlocks& src, const DstBlocks& dst, bool rings, index_t begin, index_t end) {
  PlanCore& p = plan_;
  const bool stream = stream_for(p.rp.stats.bytes_sent + p.rp.stats.bytes_local);
  if (rings) slot_.assign(p.rp.sends.size(), nullptr);
  index_t since = 0;  // bytes walked since the last poll
  // A row into ring i's message at byte `off`, across slot ends.
  auto put = [&](size_t i, index_t off, const std::byte* f, index_t n) {
    while (n > 0) {
      if (slot_[i] == nullptr) {
        while ((slot_[i] = fifo_.claim(i)) == nullptr)
          if (!fifo_.poll(p, src, dst)) fifo_.wait(p);
      }
      const index_t at = fifo_.sent(i);  // the slot's first byte in the message
      const index_t end = std::min(at + fifo_.slot_bytes(i), p.rp.sends[i].bytes);
      const index_t m = std::min(n, end - off);
      std::byte* t = slot_[i] + (off - at);
      if (fifo_.stream_slots()) copy_row_chained(t, f, static_cast<size_t>(m));  // the ring's rows follow in its slot
      else std::memcpy(t, f, static_cast<size_t>(m));
      off += m, f += m, n -= m;
      if (off == end) fifo_.commit(i, end - at), slot_[i] = nullptr;
    }
  };
  // A row into a target: streamed whole where its ends allow (a chained end
  // completes its line with the neighbour's streaming stores; an end on a line
  // boundary has no partial line); with rings, cut at line boundaries every
  // kPollBytes for the polls.
  auto copy = [&](std::byte* t, const std::byte* f, index_t n, std::uint16_t flags) {
    for (;;) {
      index_t m = n;
      if (rings && n > kPollBytes) m = kPollBytes - static_cast<index_t>(reinterpret_cast<std::uintptr_t>(t + kPollBytes) & 63);
      const auto head = reinterpret_cast<std::uintptr_t>(t), tail = head + static_cast<std::uintptr_t>(m);
      const bool last = m == n;
      if (stream && ((flags & kChainedBefore) || (head & 63) == 0) && ((last && (flags & kChainedAfter)) || (tail & 63) == 0))
        copy_row_chained(t, f, static_cast<size_t>(m));
      else
        copy_row(t, f, static_cast<size_t>(m), stream);
      if (last) return;
      t += m, f += m, n -= m;
      fifo_.poll(p, src, dst);
    }
  };
  std::byte* to[kMaxPeriod];
  const std::byte* from[kMaxPeriod];
  index_t pos = 0;  // the walk's bytes before group g
  for (const RowGroup& g : groups_) {
    const index_t gpos = pos;
    pos += g.bytes * g.reps;
    if (pos <= begin) continue;
    if (gpos >= end) break;
    const Row* r = &rows_[static_cast<size_t>(g.first)];
    for (std::int64_t j = 0; j < g.period; ++j) {
      if (r[j].dst_block == kRingRow) to[j] = nullptr;
      else if (r[j].target < 0) to[j] = static_cast<std::byte*>(dst.ptr[static_cast<size_t>(r[j].dst_block)]);
      else if (send_path_[static_cast<size_t>(r[j].target)] == kPush)
        to[j] = push_base_[static_cast<size_t>(r[j].target)][static_cast<size_t>(r[j].dst_block)];
      else to[j] = nullptr;  // that peer pulls, or gets messages
      if (to[j] != nullptr) to[j] += r[j].dst_off;
      from[j] = static_cast<const std::byte*>(src.ptr[static_cast<size_t>(r[j].src_block)]) + r[j].src_off;
    }
    const std::int64_t k0 = begin > gpos && g.bytes > 0 ? (begin - gpos) / g.bytes : 0;
    index_t at = gpos + k0 * g.bytes;  // the walk's bytes before row (k, j)
    for (std::int64_t k = k0; k < g.reps && at < end; ++k)
      for (std::int64_t j = 0; j < g.period; ++j) {
        // The row's bytes in [begin, end); a row cut there keeps its chain
        // flags only at the ends it still has.
        const index_t lo = std::max(at, begin) - at, hi = std::min(at + r[j].bytes, end) - at;
        at += r[j].bytes;
        if (lo >= hi) continue;
        const index_t n = hi - lo;
        const auto flags = static_cast<std::uint16_t>((lo == 0 ? r[j].flags & kChainedBefore : 0) |
                                                      (hi == r[j].bytes ? r[j].flags & kChainedAfter : 0));
        if (r[j].dst_block == kRingRow) put(static_cast<size_t>(r[j].target), r[j].dst_off + k * r[j].dst_step + lo, from[j] + k * g.src_step + lo, n);
        else if (to[j] != nullptr) copy(to[j] + k * r[j].dst_step + lo, from[j] + k * g.src_step + lo, n, flags);
        else continue;
        if (rings && (since += n) >= kPollBytes) fifo_.poll(p, src, dst), since = 0;
      }
  }
  if (stream) stream_fence();
}

// Copies receive peer i's segments from its source blocks, mapped here.
std::string Shm::pull(size_t i, const DstBlocks& dst) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.receives[i];
  const index_t es = p.rp.elem_size;
  std::vector<std::byte*> base;
  if (std::string err = resolve(src_in_[i], recv_src_blocks_[i], pp.peer, base); !err.empty()) return err;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the header before the source's loads
  const size_t per = record_size(p.rp.ndim);
  const bool stream = stream_for(p.rp.stats.bytes_received);
  const Arithmetic* a = arithmetic_of(p);
  for (size_t k = 0; k < pp.segments.size(); ++k) {
    const Segment& s = pp.segments[k];
    const std::int64_t* w = &src_where_[i][k * per];
    const SenderView v = sender_view(w, p.rp.ndim);
    const std::byte* from = base[static_cast<size_t>(v.block)] + v.offset * es;
    if (a)
      axpby_run(*a, s.shape, run_both(s, w), es, s.count, from, v.strides, v.step, dst.at(s.at, es), s.at.strides,
                s.step);
    else
      copy_run(s.shape, run_both(s, w), es, s.count, from, v.strides, v.step, dst.at(s.at, es), s.at.strides, s.step,
               stream);
  }
  if (stream) stream_fence();
  return {};
}

// Reads receive peer i's segments from its process (cross-memory attach): the
// long rows straight into the target, the short ones as the one run the sender
// packed, then unpacked. Completes the packed run's address request whatever happens.
std::string Shm::cma_read(size_t i, const DstBlocks& dst) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.receives[i];
  const index_t es = p.rp.elem_size;
  const size_t per = record_size(p.rp.ndim);
  std::vector<std::uint64_t>& base = cma_base_[i];
  addresses(src_in_[i], recv_src_blocks_[i], base);
  mover_.start(cma_peers_.pid[static_cast<size_t>(pp.peer)], CmaMover::read);
  std::string err;
  for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k)
    if (!pack_.recv[i][k])
      err = mover_.segment(p, pp.segments[k], &src_where_[i][k * per], base.data(), dst.at(pp.segments[k].at, es));
  if (err.empty()) err = mover_.flush();
  if (!err.empty()) err = cat("shm: reading rank ", pp.peer, "'s source: ", err);
  if (pack_.recv_bytes[i] == 0) return err;
  MPI_Status st;
  check_mpi(MPI_Wait(&packed_req_[i], &st), "MPI_Wait", p.comm, "receive from", pp.peer);
  if (!err.empty()) return err;
  if (!rbuf_) rbuf_ = p.recv_scratch();
  std::byte* packed = rbuf_ + p.recv_offset[i];
  mover_.start(cma_peers_.pid[static_cast<size_t>(pp.peer)], CmaMover::read);
  err = mover_.run(packed, packed_in_[i], pack_.recv_bytes[i]);
  if (err.empty()) err = mover_.flush();
  for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k) {
    if (!pack_.recv[i][k]) continue;
    const Segment& g = pp.segments[k];
    unpack_run(g, packed, dst.at(g.at, es), es, stream_packed_in_);
    packed += g.elements() * es;
  }
  if (stream_packed_in_) stream_fence();
  return err.empty() ? err : cat("shm: reading rank ", pp.peer, "'s packed rows: ", err);
}

// Send peer i reads this rank's source (cma path): its short rows packed here
// first, and the packed run's address sent; then its "done" awaited.
void Shm::cma_send(size_t i, const SrcBlocks& src) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.sends[i];
  if (pack_.send_bytes[i] > 0) {
    if (!sbuf_) sbuf_ = p.send_scratch();
    const index_t es = p.rp.elem_size;
    std::byte* at = sbuf_ + p.send_offset[i];
    for (size_t k = 0; k < pp.segments.size(); ++k) {
      if (!pack_.send[i][k]) continue;
      pack_run(pp.segments[k], src.at(pp.segments[k].at, es), at, es, stream_packed_out_);
      at += pp.segments[k].elements() * es;
    }
    if (stream_packed_out_) stream_fence();
    packed_out_[i] = reinterpret_cast<std::uint64_t>(sbuf_ + p.send_offset[i]);
    post(true, &packed_out_[i], 1, MPI_UINT64_T, pp.peer, kTagPacked);
  }
  post(false, nullptr, 0, MPI_BYTE, pp.peer, kTagDone);
}

// This rank writes send peer i's target (cma path, the pair's target has fewer
// runs): rows shorter than kCmaWritePackBelow packed into the scratch first, in
// the order they are written, a batch at a time.
std::string Shm::cma_write(size_t i, const SrcBlocks& src) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.sends[i];
  const index_t es = p.rp.elem_size;
  const size_t per = record_size(p.rp.ndim);
  std::vector<std::uint64_t>& base = cma_base_out_[i];
  addresses(dst_in_[i], send_dst_blocks_[i], base);
  std::byte* scratch = nullptr;
  if (pack_.send_bytes[i] > 0) {
    if (!sbuf_) sbuf_ = p.send_scratch();
    scratch = sbuf_ + p.send_offset[i];
  }
  mover_.start(cma_peers_.pid[static_cast<size_t>(pp.peer)], CmaMover::write, scratch,
               std::min(pack_.send_bytes[i], kCmaPackBatch));
  std::string err;
  for (size_t k = 0; k < pp.segments.size() && err.empty(); ++k) {
    const Segment& s = pp.segments[k];
    err = mover_.segment(p, s, &dst_where_[i][k * per], base.data(), const_cast<std::byte*>(src.at(s.at, es)),
                         pack_.send[i][k] != 0);
  }
  if (err.empty()) err = mover_.flush();
  return err.empty() ? err : cat("shm: writing rank ", pp.peer, "'s target: ", err);
}

void Shm::post(bool send, void* buf, std::int64_t count, MPI_Datatype type, int peer, int tag) {
  PlanCore& p = plan_;
  sq_.emplace_back();
  const int n = static_cast<int>(count);
  if (send)
    check_mpi(MPI_Isend(buf, n, type, peer, tag, p.comm, &sq_.back()), "MPI_Isend", p.comm, "send to", peer);
  else
    check_mpi(MPI_Irecv(buf, n, type, peer, tag, p.comm, &sq_.back()), "MPI_Irecv", p.comm, "receive from", peer);
  swhat_.push_back(cat(send ? "send to rank " : "receive from rank ", peer));
}

// A message as p2p's (one run of storage sent from the source, else packed).
void Shm::send_message(size_t i, const SrcBlocks& src) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.sends[i];
  if (!sbuf_) sbuf_ = p.send_scratch();
  const std::byte* out = message_out(p, static_cast<int>(i), src, send_run_[i], sbuf_ + p.send_offset[i]);
  for (index_t off = 0; off < pp.bytes; off += p.options.max_message_bytes) {
    sq_.emplace_back();
    swhat_.push_back(cat("send to rank ", pp.peer));
    check_mpi(MPI_Isend(out + off,
                        static_cast<int>(std::min(p.options.max_message_bytes, pp.bytes - off)), MPI_BYTE, pp.peer,
                        kTagData, p.comm, &sq_.back()),
              "MPI_Isend", p.comm, "send to", pp.peer);
  }
}

// A message as p2p's (one run of the target received into it, else unpacked).
void Shm::receive_message(size_t i, const DstBlocks& dst) {
  PlanCore& p = plan_;
  const PeerPlan& pp = p.rp.receives[i];
  if (!rbuf_) rbuf_ = p.recv_scratch();
  std::byte* in = message_in(p, dst, recv_run_[i], rbuf_ + p.recv_offset[i]);
  for (index_t off = 0; off < pp.bytes; off += p.options.max_message_bytes) {
    rq_.emplace_back();
    rpeer_.push_back(static_cast<int>(i));
    ++pending_[i];
    check_mpi(MPI_Irecv(in + off,
                        static_cast<int>(std::min(p.options.max_message_bytes, pp.bytes - off)), MPI_BYTE, pp.peer,
                        kTagData, p.comm, &rq_.back()),
              "MPI_Irecv", p.comm, "receive from", pp.peer);
  }
}

void Shm::run(const SrcBlocks& src, const DstBlocks& dst) {
  PlanCore& p = plan_;
  const std::int64_t execute = executes_++;
  const size_t nr = p.rp.receives.size(), ns = p.rp.sends.size();
  rq_.clear(), rpeer_.clear(), sq_.clear(), swhat_.clear();
  rbuf_ = sbuf_ = nullptr;  // the scratch buffers only for messages, fetched per run
  std::fill(pending_.begin(), pending_.end(), 0);
  auto on_node = [&](int peer) { return on_node_[static_cast<size_t>(peer)] != 0; };
  // 1. Headers both ways with the peers on the node (sources and targets ready);
  // messages with the others. Only the headers are waited for here: a wait on
  // the messages to other nodes could hang. Their receivers may be spinning on a
  // ring by then (Fifos::finish), and a message above the eager limit completes
  // only while its receiver is in MPI: 0 in a ring with 1, 1 waiting for its
  // message to 2, 2 in a ring with 3, 3 waiting for its message to 0
  // (test_conformance_shm_heap_nodes2 on 4 ranks under ASan hung so in CI).
  for (size_t i = 0; i < ns; ++i)
    if (!on_node(p.rp.sends[i].peer)) send_path_[i] = kMessage, send_message(i, src);
  const size_t messages = sq_.size();  // waited for in step 4
  for (size_t i = 0; i < nr; ++i) {
    const int peer = p.rp.receives[i].peer;
    if (!on_node(peer)) {
      recv_path_[i] = kMessage;
      receive_message(i, dst);
      continue;
    }
    header(reinterpret_cast<const void* const*>(dst.ptr.data()), *p.dst_local, recv_dst_blocks_[i], peer, dst_out_[i]);
    post(true, dst_out_[i].data(), static_cast<std::int64_t>(dst_out_[i].size()), MPI_INT64_T, peer, kTagTarget);
    post(false, src_in_[i].data(), static_cast<std::int64_t>(src_in_[i].size()), MPI_INT64_T, peer, kTagSource);
  }
  for (size_t i = 0; i < ns; ++i) {
    const int peer = p.rp.sends[i].peer;
    if (!on_node(peer)) continue;
    header(src.ptr.data(), *p.src_local, send_src_blocks_[i], peer, src_out_[i]);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the source's stores before the header
    post(true, src_out_[i].data(), static_cast<std::int64_t>(src_out_[i].size()), MPI_INT64_T, peer, kTagSource);
    post(false, dst_in_[i].data(), static_cast<std::int64_t>(dst_in_[i].size()), MPI_INT64_T, peer, kTagTarget);
  }
  const int headers = static_cast<int>(sq_.size() - messages);
  status_.resize(sq_.size());
  check_wait(MPI_Waitall(headers, sq_.data() + messages, status_.data()), "MPI_Waitall", p.comm, status_.data(),
             headers, nullptr, [&](int k) { return swhat_[messages + static_cast<size_t>(k)]; });
  sq_.resize(messages), swhat_.resize(messages);
  // 2. Each pair's path, the same on both sides (both headers known to both);
  // the "done" each side waits for.
  for (size_t i = 0; i < nr; ++i) {
    if (!on_node(p.rp.receives[i].peer)) continue;
    recv_path_[i] = decide(src_in_[i][0], dst_out_[i][0], fifo_.recv_ok(i), recv_cma_[i]);
    if (recv_path_[i] == kCma && pack_.recv_write[i]) recv_path_[i] = kCmaWrite;
    if (recv_path_[i] == kMessage) receive_message(i, dst);
    if (recv_path_[i] == kPush || recv_path_[i] == kCmaWrite)
      post(false, nullptr, 0, MPI_BYTE, p.rp.receives[i].peer, kTagDone);
    if (recv_path_[i] == kCma && pack_.recv_bytes[i] > 0)
      check_mpi(MPI_Irecv(&packed_in_[i], 1, MPI_UINT64_T, p.rp.receives[i].peer, kTagPacked, p.comm, &packed_req_[i]),
                "MPI_Irecv", p.comm, "receive from", p.rp.receives[i].peer);
  }
  bool any_push = false;
  for (size_t i = 0; i < ns; ++i) {
    if (!on_node(p.rp.sends[i].peer)) continue;
    send_path_[i] = decide(src_out_[i][0], dst_in_[i][0], fifo_.send_ok(i), send_cma_[i]);
    if (send_path_[i] == kCma && pack_.send_write[i]) send_path_[i] = kCmaWrite;
    any_push = any_push || send_path_[i] == kPush;
    if (send_path_[i] == kMessage) send_message(i, src);
    if (send_path_[i] == kCma) cma_send(i, src);
    if (send_path_[i] == kPull) post(false, nullptr, 0, MPI_BYTE, p.rp.sends[i].peer, kTagDone);
  }
  // 3. The copies: push (with the local pieces, in source order), the rings
  // (the local pieces while no ring can move), cma writes, pull, cma reads;
  // "done" after each but the rings. A failed mapping, read or write still sends
  // "done" (no hang) and is agreed below.
  std::string err;
  bool any_fifo = false;
  for (size_t i = 0; i < nr; ++i) any_fifo |= recv_fifo_[i] = recv_path_[i] == kFifo;
  for (size_t i = 0; i < ns; ++i) any_fifo |= send_fifo_[i] = send_path_[i] == kFifo;
  // The walk fills the rings it can (walked_) where there are any.
  if ((any_push || (any_fifo && !fifo_walk_disabled())) && (!rows_built_ || rows_for_ != send_fifo_)) build_rows();
  const bool walk_rings = any_fifo && walked_rings_ > 0 && !groups_.empty();
  if (any_fifo) fifo_.begin(p, recv_fifo_, send_fifo_, walk_rings ? walked_ : std::vector<char>(), execute);
  if (any_push || walk_rings) err = push(src, dst, any_fifo);
  walk_ran_ = (any_push || walk_rings) && err.empty() && !groups_.empty();
  if (any_fifo) {
    // The local copies fill the waits, a ring's bytes at a time (256 KB; a
    // compressed plan may hold them as one run of 128 MB: the peers' rings would
    // wait for all of it: case a on the heap 36-41 ms, cut 27 ms).
    LocalParts locals(p, src, dst, kFifoSlots * fifo_slot_limit() / p.rp.elem_size,
                      any_push || walk_rings ? p.rp.locals.size() : 0);  // push or the walk copied them
    fifo_.finish(p, src, dst, [&] { return locals.step(); });
    stream_fence();
  } else if (!any_push) {
    copy_locals(p, src, dst);
  }
  for (size_t i = 0; i < ns; ++i)
    if (send_path_[i] == kPush) post(true, nullptr, 0, MPI_BYTE, p.rp.sends[i].peer, kTagDone);
  // Writes and reads of other ranks' memory, each in from_next's order.
  for (size_t i : send_order_)
    if (send_path_[i] == kCmaWrite) {
      std::string e = cma_write(i, src);
      if (err.empty()) err = std::move(e);
      post(true, nullptr, 0, MPI_BYTE, p.rp.sends[i].peer, kTagDone);
    }
  for (size_t i : recv_order_)
    if (recv_path_[i] == kPull) {
      if (err.empty()) err = pull(i, dst);
      post(true, nullptr, 0, MPI_BYTE, p.rp.receives[i].peer, kTagDone);
    }
  for (size_t i : recv_order_)
    if (recv_path_[i] == kCma) {
      std::string e = cma_read(i, dst);
      if (err.empty()) err = std::move(e);
      post(true, nullptr, 0, MPI_BYTE, p.rp.receives[i].peer, kTagDone);
    }
  // 4. Messages, unpacked as each peer's last chunk arrives; then every "done"
  // (my target written, my source read) and my sends.
  for (size_t left = rq_.size(); left > 0;) {
    int count = 0;
    index_.resize(rq_.size());
    status_.resize(rq_.size());
    check_wait(wait_some(p, static_cast<int>(rq_.size()), rq_.data(), &count, index_.data(), status_.data()),
               "MPI_Waitsome", p.comm, status_.data(), count, index_.data(), [&](int k) {
                 return cat("receive from rank ", p.rp.receives[static_cast<size_t>(rpeer_[static_cast<size_t>(k)])].peer);
               });
    for (int j = 0; j < count; ++j) {
      const int i = rpeer_[static_cast<size_t>(index_[static_cast<size_t>(j)])];
      if (--pending_[static_cast<size_t>(i)] == 0 && recv_run_[static_cast<size_t>(i)].block < 0)
        unpack_peer(p, i, rbuf_ + p.recv_offset[static_cast<size_t>(i)], dst);
    }
    left -= static_cast<size_t>(count);
  }
  status_.resize(sq_.size());
  check_wait(wait_all(p, static_cast<int>(sq_.size()), sq_.data(), status_.data()), "MPI_Waitall", p.comm,
             status_.data(), static_cast<int>(sq_.size()), nullptr, [&](int k) { return swhat_[static_cast<size_t>(k)]; });
  std::atomic_thread_fence(std::memory_order_seq_cst);  // "done" before the target's loads
  agree(p.comm, err);  // a failed mapping is reported on every rank
  if (fifo_.slot_choice().decides_after(execute)) fifo_.decide_slots(p, execute);  // every rank, rings or not
}

namespace {
// How this rank writes its rings' slots, where timing chooses (fifo.hpp).
std::string slots_chosen(const SlotChoice& c, std::int64_t executes) {
  const auto ms = [&](bool streamed) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", c.estimate(streamed) * 1e3);
    return c.estimate(streamed) > 0 ? std::string(b) : std::string("not timed yet");
  };
  return cat("; slots ", c.streamed() ? "streamed" : "written with ordinary stores", " (chosen by timing, ", executes,
             executes == 1 ? " execute" : " executes", "; this rank's estimates: streamed ", ms(true),
             ", ordinary stores ", ms(false), ")");
}
}  // namespace

// What each peer's data took in the last run (the paths are kept from it), and
// each receive peer's path and why, peers with the same path and reason together.
std::string Shm::describe() const {
  const PlanCore& p = plan_;
  index_t pushed = 0, pulled = 0, ringed = 0, attached = 0, written = 0, message = 0, off_node = 0;
  std::vector<std::pair<std::string, std::vector<int>>> why;  // in order of first appearance
  for (size_t i = 0; i < p.rp.receives.size(); ++i) {
    const index_t b = p.rp.receives[i].bytes;
    std::string w;
    if (!on_node_[static_cast<size_t>(p.rp.receives[i].peer)]) off_node += b, w = "message (another node)";
    else if (recv_path_[i] == kPush) pushed += b, w = "push (target in a shared window)";
    else if (recv_path_[i] == kPull) pulled += b, w = "pull (source in a shared window)";
    else if (recv_path_[i] == kFifo)
      ringed += b, w = cat("fifo (not in windows: packed by the sender into a ring in shared memory, unpacked here",
                           fifo_.recv_source_order(i) ? "; in the sender's source order"
                           : fifo_.recv_columns(i)    ? "; runs in column order"
                                                      : "",
                           ")");
    else if (recv_path_[i] == kCma)
      attached += b, w = cat("cma (not in windows: cross-memory attach, read by this rank", cma_why(i), ")");
    else if (recv_path_[i] == kCmaWrite)
      attached += b, written += b,
      w = cat("cma (not in windows: cross-memory attach, written by the sender: fewer runs here", cma_why(i), ")");
    else message += b, w = cat("message (not in windows; ", cma_reason(recv_cma_[i]), ")");
    auto it = std::find_if(why.begin(), why.end(), [&](const auto& e) { return e.first == w; });
    if (it == why.end()) it = why.insert(why.end(), {w, {}});
    it->second.push_back(p.rp.receives[i].peer);
  }
  std::string peers;
  for (const auto& [w, ranks] : why) {
    peers += cat(peers.empty() ? "; by peer: " : "; ", w, " from rank", ranks.size() > 1 ? "s " : " ");
    constexpr size_t kShown = 8;
    for (size_t k = 0; k < ranks.size() && k < kShown; ++k) peers += cat(k ? ", " : "", ranks[k]);
    if (ranks.size() > kShown) peers += cat(" and ", ranks.size() - kShown, " more");
  }
  return cat("received ", pushed + pulled, " bytes through shared windows (one copy: ", pushed,
             " written by their senders, ", pulled, " read by this rank), ", ringed,
             " bytes through rings in shared memory (packed by their senders, unpacked here), ", attached,
             " bytes by cross-memory attach (one copy: ", attached - written, " read by this rank, ", written,
             " written by their senders), ", message,
             " bytes by messages from ranks on this node, ", off_node,
             " bytes by messages from other nodes; ", p.rp.stats.bytes_local, " bytes copied locally",
             !walk_ran_ ? std::string()
                             : cat(" (", walked_rings_ ? cat("the walk of the source in storage order filled ", walked_rings_,
                                                         walked_rings_ > 1 ? " rings" : " ring")
                                                     : std::string("push walked the source in storage order"),
                                   "; ", walk_chained_, " of ", walk_rows_,
                                   " rows chained, in ", groups_.size(), " groups",
                                   walk_parts_ > 1 ? cat(", in ", walk_parts_, " parts on as many threads") : std::string(),
                                   ")"),
             peers, fifo_.slots_timed() ? slots_chosen(fifo_.slot_choice(), executes_) : std::string());
}

// The model, per peer by where it is and where the arrays live (docs/shm.md,
// "Cost model"); node_of[r]: rank r's node, empty: every peer on this rank's node.
//   a peer on the node, arrays in shared windows: each sent segment copied once
//     into its target (push; pull is the same copy by the other side);
//   a peer on the node, arrays on the heap: a ring (exec/fifo.hpp): each sent
//     segment packed into it, each received one unpacked, at the row-copy curve
//     as p2p's packing; a pair in source order (Fifos' rule: rows of 256 B to
//     64 KB on average) at the rows that its side's storage order makes of its
//     segments (merge_stretches: a ring in source order reads the source, and
//     writes the target, along them), a received one in column order likewise
//     (whole target columns); and a sent pair that the walk fills (its merged
//     rows still 256 B to 64 KB) is no packing of its own: the walk reads the
//     source once in storage order, writing the local copies and those rings,
//     at the rows it reads without a gap (a local copy's: and writes without
//     one); with the rings off ($REDIST_SHM_FIFO=0) the
//     cross-memory attach of `direct`
//     (exec/cma.hpp, cma_predict's terms): this rank reads each received segment
//     at the calibrated process_vm_readv rate per row size; rows under
//     kCmaPackBelow packed by the sender, read as one run and unpacked; one more
//     startup per peer with packed rows (their run's address);
//   a peer on another node: a message, as p2p: packed, sent, unpacked, the
//     exchange curve per message (a message that is one run of storage on a
//     side is sent or received in place, with no copy on that side).
// T_comm = 2 t_m per peer on the node (headers, done) [+ t_m per peer with
// packed rows, heap through cma] + max(sum over sends, sum over receives) of the exchange
// time of each message to or from another node;
// T_memcpy = local copies + the on-node copies or reads above + packing and
// unpacking the messages (the row-copy curve of a single copy's footprint, for
// every term). On the heap through cma without a process_vm_readv curve
// (calibrate could not read) every peer goes by message: p2p's model, what runs then.
// Is `peer` on rp's rank's node (node_of: as model's and extra_nodes'; empty: one node)?
bool on_node(const RankPlan& rp, std::span<const int> node_of, int peer) {
  return node_of.empty() || node_of[static_cast<size_t>(peer)] == node_of[static_cast<size_t>(rp.rank)];
}

// The rings' part of the model above.
constexpr index_t kModelPieces = index_t{1} << 18;  // more pieces: each segment at its own rows

std::vector<StoragePiece> pieces_of(const PeerPlan& pp) {
  std::vector<StoragePiece> out;
  for (const Segment& g : pp.segments) add_pieces(g.shape, g.run, g.at, g.count, g.step, out);
  return out;
}

index_t piece_count(const std::vector<PeerPlan>& peers, const std::vector<char>& on) {
  index_t n = 0;
  for (size_t i = 0; i < peers.size(); ++i)
    if (on[i])
      for (const Segment& g : peers[i].segments) n += g.segments();
  return n;
}

// Seconds to copy a pair's segments, each along its own rows (pack_time's term).
double per_segment(const PeerPlan& pp, index_t es, const Rates& rt) {
  double t = 0;
  for (const Segment& g : pp.segments) t += rt.copy.time(runs_of(g, es));
  return t;
}

// Seconds to copy `pieces` along rows of row[i] elements (the curve per row).
double along(const std::vector<StoragePiece>& pieces, const std::vector<index_t>& row, index_t es, const Rates& rt) {
  double t = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const double bytes = static_cast<double>(pieces[i].shape.volume() * es);
    t += bytes * rt.copy.at(static_cast<double>(row[i] * es));
  }
  return t;
}

// T_memcpy of the rings' pairs (send_on, recv_on: the pairs on the node) and
// the local copies, on the heap.
double ring_copies(const RankPlan& rp, const Rates& rt, const std::vector<char>& send_on,
                   const std::vector<char>& recv_on) {
  const index_t es = rp.elem_size;
  index_t local_pieces = 0, walk_rows = 0, walk_bytes = 0;
  for (const LocalCopy& c : rp.locals) {
    local_pieces += c.segments();
    walk_rows += run_rows(c.shape, c.run, c.count, c.from_step, c.to_step).rows, walk_bytes += c.elements() * es;
  }
  double t = 0;
  if (local_pieces + piece_count(rp.sends, send_on) + piece_count(rp.receives, recv_on) > kModelPieces) {
    for (size_t i = 0; i < rp.sends.size(); ++i)
      if (send_on[i]) t += per_segment(rp.sends[i], es, rt);
    for (size_t i = 0; i < rp.receives.size(); ++i)
      if (recv_on[i]) t += per_segment(rp.receives[i], es, rt);
    return t + local_copy_time(rp, rt);
  }
  // Sends: the walk's rings (source order, merged rows 256 B to 64 KB), the
  // others packed along their rows (merged in source order).
  std::vector<size_t> walked;
  std::vector<StoragePiece> walked_pieces;  // theirs, in order
  for (size_t i = 0; i < rp.sends.size(); ++i) {
    const PeerPlan& pp = rp.sends[i];
    if (!send_on[i]) continue;
    if (!source_order_suits(pp.segments, nullptr, rp.ndim, pp.bytes)) {
      t += per_segment(pp, es, rt);
      continue;
    }
    const std::vector<StoragePiece> ps = pieces_of(pp);
    const Stretches st = merge_stretches(ps);
    const index_t mean = st.rows > 0 ? pp.bytes / st.rows : 0;
    if (mean >= kWalkRowMin && mean <= kWalkRowMax) {
      walked.push_back(i);
      walked_pieces.insert(walked_pieces.end(), ps.begin(), ps.end());
      for (const Segment& g : pp.segments) walk_rows += run_rows(g.shape, g.run, g.count, g.step, g.step).rows;
      walk_bytes += pp.bytes;
    } else {
      t += along(ps, st.row, es, rt);
    }
  }
  // Receives: unpacked along the target's rows in source order or column order
  // (whole target columns; not where the region permutes dimensions, which this
  // rank's own source side shows: its senders keep the plan's order), else per
  // segment.
  const bool permuted = std::any_of(rp.locals.begin(), rp.locals.end(), [](const LocalCopy& c) {
    return c.shape[0] > 1 && c.from.strides[0] != 1;
  }) || std::any_of(rp.sends.begin(), rp.sends.end(), [](const PeerPlan& pp) { return !columns_read_along(pp.segments); });
  for (size_t i = 0; i < rp.receives.size(); ++i) {
    if (!recv_on[i]) continue;
    const PeerPlan& pp = rp.receives[i];
    if (!source_order_suits(pp.segments, nullptr, rp.ndim, pp.bytes) && (permuted || !columns_help(pp.segments))) {
      t += per_segment(pp, es, rt);
      continue;
    }
    const std::vector<StoragePiece> ps = pieces_of(pp);
    t += along(ps, merge_stretches(ps).row, es, rt);
  }
  // The walk (build_rows: none above kMaxRows rows, or under kSortRowsAbove bytes a row on average).
  if (walked.empty() || walk_rows > kMaxRows || walk_bytes < walk_rows * kSortRowsAbove) {
    for (const size_t i : walked) t += per_segment(rp.sends[i], es, rt);
    return t + local_copy_time(rp, rt);
  }
  std::vector<StoragePiece> from, to;
  for (const LocalCopy& c : rp.locals) {
    add_pieces(c.shape, c.run, c.from, c.count, c.from_step, from);
    add_pieces(c.shape, c.run, c.to, c.count, c.to_step, to);
  }
  const size_t locals = from.size();
  from.insert(from.end(), walked_pieces.begin(), walked_pieces.end());
  std::vector<index_t> row = merge_stretches(from).row;
  const std::vector<index_t> written = merge_stretches(to).row;
  for (size_t k = 0; k < locals; ++k) row[k] = std::min(row[k], written[k]);
  return t + along(from, row, es, rt);
}

// The model cannot know where execute's buffers will live; `suits` checks them
// for auto, which takes the heap model where they are not in windows.
Prediction model(const RankPlan& rp, const Machine& m, bool heap, std::span<const int> node_of) {
  const bool cma = heap && fifo_disabled(), rings = heap && !cma;
  if (cma && m.vm_read.empty()) return registry()[static_cast<size_t>(find_strategy("p2p"))].predict(rp, m);
  const Rates rt = rates(rp, m, false);
  const index_t es = rp.elem_size;
  const auto short_rows = [&](const PeerPlan& pp) {
    return std::any_of(pp.segments.begin(), pp.segments.end(), [&](const Segment& g) { return g.run * es < kCmaPackBelow; });
  };
  double copies = rings ? 0 : local_copy_time(rp, rt), sent = 0, received = 0;
  index_t on_sends = 0, on_receives = 0, packed_sends = 0, packed_receives = 0;
  if (rings) {
    std::vector<char> send_on(rp.sends.size()), recv_on(rp.receives.size());
    for (size_t i = 0; i < send_on.size(); ++i) send_on[i] = on_node(rp, node_of, rp.sends[i].peer);
    for (size_t i = 0; i < recv_on.size(); ++i) recv_on[i] = on_node(rp, node_of, rp.receives[i].peer);
    copies = ring_copies(rp, rt, send_on, recv_on);
  }
  for (const PeerPlan& pp : rp.sends) {
    if (!on_node(rp, node_of, pp.peer)) {  // a message: packed (not one run of storage: sent as it is)
      sent += m.exchange_time(static_cast<double>(pp.bytes));
      if (storage_run(pp).block < 0)
        for (const Segment& g : pp.segments) copies += rt.copy.time(runs_of(g, es));
      continue;
    }
    ++on_sends;
    if (rings) continue;  // ring_copies
    packed_sends += cma && short_rows(pp);
    for (const Segment& g : pp.segments)  // windows: copied into the target; cma: short rows packed
      if (!cma || g.run * es < kCmaPackBelow) copies += rt.copy.time(runs_of(g, es));
  }
  for (const PeerPlan& pp : rp.receives) {
    if (!on_node(rp, node_of, pp.peer)) {  // a message: unpacked (one run of storage: received in place)
      received += m.exchange_time(static_cast<double>(pp.bytes));
      if (storage_run(pp).block < 0)
        for (const Segment& g : pp.segments) copies += rt.copy.time(runs_of(g, es));
      continue;
    }
    ++on_receives;
    if (!heap || rings) continue;  // written by the sender (or pulled: the same copy); rings: ring_copies
    packed_receives += short_rows(pp);
    for (const Segment& g : pp.segments) copies += cma_read_time(g, es, rt);
  }
  Prediction pr;
  pr.comm = 2 * m.startup * static_cast<double>(std::max(on_sends, on_receives)) +
            m.startup * static_cast<double>(std::max(packed_sends, packed_receives)) + std::max(sent, received);
  pr.memcpy = copies;
  return pr;
}

// Its buffers (redist::extra_memory with nodes): the scratch of messages is the
// whole volume each way (PlanCore::send_scratch / recv_scratch), allocated when
// any peer of that side goes by message (on another node; on the node on the
// heap through cma, which packs short rows there: counted whenever the rings are
// off); and on the heap each receiver's rings in /dev/shm, one per sender on
// the node. Through shared windows on one node: nothing.
index_t extra_nodes(const RankPlan& rp, bool heap, std::span<const int> node_of) {
  const bool cma = heap && fifo_disabled(), rings = heap && !cma;
  const auto by_message = [&](int peer) { return cma || !on_node(rp, node_of, peer); };
  index_t bytes = 0;
  bool sends = false, receives = false;
  for (const PeerPlan& pp : rp.sends) sends = sends || (pp.bytes > 0 && by_message(pp.peer));
  for (const PeerPlan& pp : rp.receives) {
    if (pp.bytes > 0 && by_message(pp.peer)) receives = true;
    else if (rings) bytes += fifo_ring_bytes(pp.bytes, rp.elem_size);
  }
  return bytes + (sends ? rp.stats.bytes_sent : 0) + (receives ? rp.stats.bytes_received : 0);
}

// Every peer on the node, arrays in windows / on the heap (redist::predict
// without nodes).
Prediction predict(const RankPlan& rp, const Machine& m) { return model(rp, m, false, {}); }
Prediction predict_heap(const RankPlan& rp, const Machine& m) { return model(rp, m, true, {}); }

// auto's condition for the model above: every source block in a shared window
// (the window's members decide at execute whether each pair pushes or pulls).
bool suits(const PlanCore& p, const SrcBlocks& src) {
  for (index_t b = 0; b < p.src_local->nblocks(); ++b) {
    const index_t bytes = p.src_local->block_elements(b) * p.rp.elem_size;
    if (bytes > 0 && find_window(src.ptr[static_cast<size_t>(b)], bytes, nullptr).owner < 0) return false;
  }
  return true;
}

}  // namespace

StrategyEntry shm_strategy() {
  StrategyEntry e = entry<Shm>(
      "shm",
      "ranks on one node copy each remote byte once through shared windows (push or pull); memory the user "
      "allocated goes through rings in shared memory (packed, then unpacked), else cross-memory attach (cma); "
      "messages between nodes or where none works",
      predict);
  e.arithmetic = true;
  e.suits = suits;
  e.model_condition = "arrays in shared windows (redist::shared_allocate)";
  e.predict_heap = predict_heap;
  e.heap_model =
      "rings in shared memory: packed and unpacked along the rows their order walks, rings in source order filled "
      "by one walk of the source with the local copies; cross-memory attach where "
      "REDIST_SHM_FIFO=0 turns the rings off";
  e.predict_nodes = model;
  e.extra_nodes = extra_nodes;
  e.tuning = [] { return fifo_stream_forced() < 0 ? static_cast<int>(SlotChoice::kTrials) + 1 : 0; };
  return e;
}

}  // namespace redist::detail
