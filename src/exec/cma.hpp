// Linux cross-memory attach for the strategies that copy a peer's rows straight
// between two processes' memories: `direct` (the receiver reads the sender's
// source, process_vm_readv), and `shm`'s `cma` path for peers on the node whose
// arrays are not in shared windows (docs/shm.md), which also lets the sender
// write the receiver's target (process_vm_writev) when that side has fewer runs.
// One copy per byte, no message carrying data; short rows are packed by the
// sender (kCmaPackBelow when read, kCmaWritePackBelow when written).
//
// Why the direction matters: the kernel pins the pages of every REMOTE iovec
// separately (about 0.5 us each here), while a local iovec costs about 0.05 us.
// Case a of issue 14 (source rows of 1.6 KB at gaps, target columns adjacent):
// 128 MB read in 80,000 remote rows took 60-64 ms, written as 80,000 local rows
// into one merged remote run per batch 22-24 ms (a copy program, 2 processes).
//
// Once per plan: every rank's process id, probe and landing addresses
// (cma_peers), a probe read per peer and a probe write (cma_probe: ptrace/yama
// restrictions or a seccomp filter make them fail), the segment records
// (exchange_records, exec/remote.hpp), who moves each pair and which segments
// travel packed (cma_packing). Per execute: block base pointers, then the reads
// or writes, in batches of IOV_MAX iovecs per side (CmaMover).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exec/strategy.hpp"

namespace redist::detail {

// The reader asks its sender to pack segments whose contiguous run (merged over
// both sides) is shorter than this many bytes: one process_vm_readv per short row
// costs more than packing it, streamed, and unpacking it (measured crossover
// between 1.6 KB and 3.2 KB rows, docs/strategies.md).
inline constexpr index_t kCmaPackBelow = 2048;

// $REDIST_CMA=0 turns cross-memory attach off (to test the fallbacks).
bool cma_disabled();

// Rows written by the sender shorter than this many bytes are packed by it first
// and written as one local run: a local iovec per 80-byte row cost 36 ns, more
// than copying it (case d: 8 MB in 80-byte rows written row by row 4.5-5.0 ms,
// packed then written 2.6 ms; 1.6 KB rows: row by row 22-24 ms, packed 32 ms).
inline constexpr index_t kCmaWritePackBelow = 512;

// A pair whose runs (adjacent rows merged) average at least this many bytes on
// both sides, between two ranks that each copy at least as many other bytes,
// moves through cross-memory attach even where `shm` could make a ring: one
// kernel copy per byte and a few iovecs, against the ring's two copies (issue
// 14's case b on the heap, rows of 12.8 MB: `direct` 1.24x the single-copy limit,
// shm's ring 1.62x, docs/shm.md). Where one side has nothing else to copy the
// ring's two copies run at once on two cores, and the ring is faster (rank 0's
// 4000^2 array to rank 1: 17-21 ms against 23-25 through cross-memory attach).
inline constexpr index_t kCmaLongRun = index_t{64} << 10;

// Collective over `comm`: every rank's process id, the address of its probe word
// (read by probes), of its landing word (written by probes), and its `work`
// (shm: the bytes it copies when every pair goes through a ring).
struct CmaPeers {
  std::vector<pid_t> pid;
  std::vector<std::uint64_t> probe, landing;
  std::vector<std::int64_t> work;
};
CmaPeers cma_peers(MPI_Comm comm, std::int64_t work = 0);

// Why a pair cannot use cross-memory attach (0: it can; > 0: the errno of the
// probe read).
inline constexpr int kCmaOk = 0, kCmaOff = -1, kCmaWrongValue = -2, kCmaArithmetic = -3;
// Reads rank r's probe word (`write`: writes its landing word): kCmaOk, the errno
// of the failed call (EPERM under a ptrace/yama restriction), or kCmaWrongValue.
int cma_probe(const CmaPeers& peers, int r, bool write = false);
// The reason in words: "REDIST_CMA=0", "probe failed: Operation not permitted", ...
std::string cma_reason(int code);

// Who moves each pair's bytes and which of its segments travel packed: decided by
// the receiver (it knows both sides' runs from `where`, the senders' records per
// receive peer) and told to the sender with `tag`. The sender writes (recv_write
// / send_write) when recv_may_write[i] (its probe write succeeded) and the
// target's side of the pair has fewer runs than the source's (cma_runs: the
// remote side's iovecs); else the receiver reads. Only the pairs with
// recv_with[i] (per receive peer) / send_with[i] (per send peer) take part; both
// sides of a pair must agree. With `peers` (their `work`), recv_long / send_long
// say which pairs take cross-memory attach rather than a ring (kCmaLongRun).
struct CmaPacking {
  std::vector<std::vector<char>> recv, send;  // per peer, per segment: packed
  std::vector<index_t> recv_bytes, send_bytes;  // per peer: bytes packed (by the sender) and read as one run
  std::vector<char> recv_write, send_write;     // per peer: the sender writes (its packed bytes: send_bytes)
  std::vector<char> recv_long, send_long;       // per peer: long runs on both sides
};
CmaPacking cma_packing(PlanCore& p, const std::vector<std::vector<std::int64_t>>& where,
                       const std::vector<char>& recv_with, const std::vector<char>& send_with,
                       const std::vector<char>& recv_may_write, int tag, const CmaPeers* peers = nullptr);

// Runs of a receive peer's segments (their sender's records in `where_i`) in the
// order CmaMover queues them, adjacent rows merged: on the source's side (the
// remote iovecs of reading them) and on the target's (of writing them).
struct CmaRuns {
  index_t source = 0, target = 0;
};
CmaRuns cma_runs(const PlanCore& p, const std::vector<Segment>& segments, const std::int64_t* where_i);

// Reads from (or writes to) one peer process in batches of IOV_MAX iovecs per
// side, resuming after partial transfers. Rows adjacent on one side merge into
// one iovec of that side (the two lists need not match, only their byte totals).
// Every call returns an empty string or the reason it failed.
class CmaMover {
 public:
  enum Direction { read, write };
  // `scratch`: where written rows are packed (segment's `pack`), reused after
  // each batch (kCmaPackBatch bytes at most: the packed rows are still in cache
  // when the kernel reads them).
  void start(pid_t pid, Direction dir, std::byte* scratch = nullptr, index_t scratch_bytes = 0) {
    pid_ = pid, dir_ = dir, local_.clear(), remote_.clear();
    scratch_ = at_ = scratch, scratch_end_ = scratch + scratch_bytes;
  }
  // Queues `bytes` contiguous bytes between `local` here and `remote` in the peer.
  std::string run(std::byte* local, std::uint64_t remote, index_t bytes);
  // Queues the rows of one segment between this rank's side (`mine`: the
  // segment's first element in its storage: read, its target; written, its
  // source) and the peer's (`w`: its record, `bases`: its block base pointers).
  // `pack` (writes): each row is first copied to the scratch, one after the
  // other in the order they are written, so the local side is one run.
  std::string segment(const PlanCore& p, const Segment& s, const std::int64_t* w, const std::uint64_t* bases,
                      std::byte* mine, bool pack = false);
  // Moves what is queued.
  std::string flush();

 private:
  pid_t pid_ = 0;
  Direction dir_ = read;
  std::vector<iovec> local_, remote_;
  std::byte *scratch_ = nullptr, *at_ = nullptr, *scratch_end_ = nullptr;
};
// Bytes packed for writing between two flushes (rows under kCmaWritePackBelow).
inline constexpr index_t kCmaPackBatch = index_t{256} << 10;

struct Rates;  // cost/model.hpp
// The model's time for this rank to read one received segment through
// cross-memory attach: rows under kCmaPackBelow packed by the sender, read as one
// run and unpacked; else one read per row at the process_vm_readv curve.
double cma_read_time(const Segment& g, index_t es, const Rates& rt);

// The model of a transfer through cross-memory attach (`direct`; `shm` on the
// heap): T_comm = 2 t_m per peer (pointers, done); T_memcpy = local copies + the
// rows this rank reads at the measured process_vm_readv cost per row size; rows
// under kCmaPackBelow packed by the sender (charged to it), read as one run,
// unpacked. Without a vm_read curve (calibrate could not read) the model of p2p,
// what runs then.
Prediction cma_predict(const RankPlan& rp, const Machine& m);

}  // namespace redist::detail
