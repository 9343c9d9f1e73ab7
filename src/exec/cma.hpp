// Linux cross-memory attach (process_vm_readv) for the strategies that read a
// peer's source straight from its memory into their target: `direct`, and
// `shm`'s `cma` path for peers on the node whose arrays are not in shared windows
// (docs/shm.md). One copy per byte, no packing, no message carrying data; short
// rows are packed by the sender and read as one run (kCmaPackBelow).
//
// Once per plan: every rank's process id and probe address (cma_peers), a probe
// read per peer (cma_probe: ptrace/yama restrictions make it fail), the segment
// records of each sender (exchange_records, exec/remote.hpp) and which segments
// travel packed (cma_packing). Per execute: the sender's block base pointers, then
// the reads, in batches of IOV_MAX rows (CmaReader).
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

// Collective over `comm`: every rank's process id and the address of its probe word.
struct CmaPeers {
  std::vector<pid_t> pid;
  std::vector<std::uint64_t> probe;
};
CmaPeers cma_peers(MPI_Comm comm);

// Why a pair cannot use cross-memory attach (0: it can; > 0: the errno of the
// probe read).
inline constexpr int kCmaOk = 0, kCmaOff = -1, kCmaWrongValue = -2, kCmaArithmetic = -3;
// Reads rank r's probe word: kCmaOk, the errno of the failed read (EPERM under a
// ptrace/yama restriction), or kCmaWrongValue.
int cma_probe(const CmaPeers& peers, int r);
// The reason in words: "REDIST_CMA=0", "probe failed: Operation not permitted", ...
std::string cma_reason(int code);

// Which of each peer's segments travel packed: decided by the reader (it knows
// both sides' runs from `where`, the senders' records per receive peer) and told
// to the sender with `tag`. Only the pairs with recv_with[i] (per receive peer) /
// send_with[i] (per send peer) take part; both sides of a pair must agree.
struct CmaPacking {
  std::vector<std::vector<char>> recv, send;  // per peer, per segment: packed
  std::vector<index_t> recv_bytes, send_bytes;  // per peer: packed bytes
};
CmaPacking cma_packing(PlanCore& p, const std::vector<std::vector<std::int64_t>>& where,
                       const std::vector<char>& recv_with, const std::vector<char>& send_with, int tag);

// Reads from one peer process in batches of IOV_MAX rows, resuming after
// partial reads. Every call returns an empty string or the reason it failed.
class CmaReader {
 public:
  void start(pid_t pid) { pid_ = pid, local_.clear(), remote_.clear(); }
  // Queues `bytes` contiguous bytes at `remote` in the peer into `local`.
  std::string run(std::byte* local, std::uint64_t remote, index_t bytes);
  // Queues the rows of one receive segment: local rows in the target, remote rows
  // in the sender's source (`w`: its record, `bases`: its block base pointers);
  // dimensions contiguous on both sides are merged into one row.
  std::string segment(const PlanCore& p, const Segment& s, const std::int64_t* w, const std::uint64_t* bases,
                      const DstBlocks& dst);
  // Reads what is queued.
  std::string flush();

 private:
  pid_t pid_ = 0;
  std::vector<iovec> local_, remote_;
};

// The model of a transfer through cross-memory attach (`direct`; `shm` on the
// heap): T_comm = 2 t_m per peer (pointers, done); T_memcpy = local copies + the
// rows this rank reads at the measured process_vm_readv cost per row size; rows
// under kCmaPackBelow packed by the sender (charged to it), read as one run,
// unpacked. Without a vm_read curve (calibrate could not read) the model of p2p,
// what runs then.
Prediction cma_predict(const RankPlan& rp, const Machine& m);

}  // namespace redist::detail
