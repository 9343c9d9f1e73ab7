// Public entry: make a Plan once (collective validation + planning), execute it
// many times with any executor. Layer `exec`.
//
//   redist::Layout src = redist::Layout::parse("8000x8000 tile=400x400 block_cyclic grid=1x2");
//   redist::Layout dst = redist::Layout::parse("8000x8000 tile=300x300 block_cyclic grid=2x1");
//   redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD);
//   plan.execute(src_buffer, dst_buffer);   // as often as needed, allocates nothing after the first
#pragma once

#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "redist/error.hpp"
#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist {

enum class Executor {
  p2p,        // one message per peer: receives posted first, unpack as each arrives
  segment,    // one message per segment
  alltoallv,  // pack, MPI_Alltoallv on bytes, unpack
  alltoallw,  // MPI derived datatypes straight from/to user memory, no packing
  direct,     // ranks on one machine: each receiver reads its segments straight from the
              // sender's memory (one copy per byte); falls back to p2p where it cannot
  auto_,      // "auto": the one with the smallest predicted time (cost.hpp), chosen
              // collectively on the first execute and kept; not in all_executors()
};
std::string to_string(Executor e);
// `segment` keeps at most this many receives and as many sends in flight (the
// cost model charges its messages at this depth).
inline constexpr int kSegmentWindow = 64;
// `direct` has the sender pack segments whose contiguous run is shorter than this
// many bytes (one process_vm_readv per short row costs more than packing it,
// streamed, and unpacking it: measured crossover between 1.6 KB and 3.2 KB rows).
inline constexpr index_t kDirectPackBelow = 2048;
Executor parse_executor(const std::string& name);  // throws redist::Error
std::vector<Executor> all_executors();  // the real ones, without auto_

struct Options {
  Executor executor = Executor::p2p;
  // Messages larger than this are sent as several messages (MPI counts are int).
  index_t max_message_bytes = index_t{1} << 30;
};

class PlanImpl;

class Plan {
 public:
  Plan();
  explicit Plan(std::unique_ptr<PlanImpl> impl);
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  ~Plan();

  const RankPlan& rank_plan() const;
  const PlanStats& stats() const;
  const Layout& source() const;
  const Layout& target() const;
  const Region& region() const;
  MPI_Comm comm() const;  // the plan's own duplicate of the user's communicator
  // What `auto_` chose (Executor::auto_ until an execute with auto_ decided).
  Executor auto_choice() const;

  // Collective. One buffer per rank for `tile` and `local_array` storage (may be
  // null when this rank stores nothing). Source and target buffers must not
  // overlap. Throws redist::Error (same on every rank) on bad buffers.
  void execute(const void* src, void* dst);
  void execute(const void* src, void* dst, Executor executor);
  // General form: one pointer per block (tile_pointers: one per local tile, in
  // LocalIndex order; other storages: exactly one).
  void execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
               Executor executor);

 private:
  std::unique_ptr<PlanImpl> impl_;
};

// Collective over `comm`: checks the arguments on every rank, agrees on the
// outcome (same error on every rank, nothing moved), then plans this rank.
Plan make_plan(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
               const Options& options = {});

}  // namespace redist
