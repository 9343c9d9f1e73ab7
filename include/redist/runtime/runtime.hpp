// Running a task graph on all ranks of a communicator (paper 004, sec. III-B/C).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "redist/runtime/task_graph.hpp"

namespace redist::runtime {

// How worker threads reach MPI (paper 000, sec. 6.2.3).
enum class CommMode {
  // Workers post activation sends themselves and, when idle, progress MPI
  // ("multiple sends exposed simultaneously"); needs MPI_THREAD_MULTIPLE.
  multiple,
  // Every MPI call is made by the communication thread; workers queue commands
  // (the original DAGuE design, for comparison).
  funneled,
  // No communication thread: the calling thread is worker 0, and the workers
  // progress MPI themselves between tasks and while idle, so that 2 ranks x 1
  // thread on 2 cores run 2 threads, not 4. Needs MPI_THREAD_MULTIPLE with more
  // than one worker thread; with one, the calling thread makes every MPI call
  // (MPI_THREAD_FUNNELED is enough).
  workers,
};

struct Options {
  int threads = 1;                   // worker threads per rank
  std::size_t eager_limit = 16384;   // payloads up to this travel inside the activation
  CommMode comm_mode = CommMode::multiple;
  bool validate = true;              // check every local edge both ways before running
  // A task enabled by a worker's completed task runs next on that worker (paper
  // 004, sec. III-B: one placeholder slot per thread, bound 1), unless a queued
  // task has a higher priority; the others go to the worker's queue (stealable).
  bool placeholder = true;
  // At most this many rendezvous transfers in flight per rank (receives posted and
  // not complete); the rest wait in arrival order (paper 004, sec. III-C: DAGuE
  // allows 3). 0: no bound.
  int max_rendezvous = 3;
  // A payload above eager_limit: false, the receiver asks for it (ACTIVATE, GET,
  // data: the producer sends only when it sees the GET, paper 004 sec. III-C);
  // true, the producer posts the data send together with the ACTIVATE and the
  // receiver posts its receive when it handles the ACTIVATE (under the same bound;
  // no GET, so the producer need not progress MPI before the data moves).
  bool push = false;
  // Idle workers steal first from workers on their own NUMA node (hwloc), then
  // from the others; false, or a build without hwloc: round robin.
  bool numa_steal = true;
  // An output above eager_limit that lies in a collection's storage shared with
  // the consumer's rank (DataCollection::storage_of: a shared window on a node) is
  // read there in place: the ACTIVATE carries where it lies, no data moves. Only
  // for outputs that nothing changes afterwards: a read_write flow whose every
  // successor reads it (Access::read, no OUT of its own) and has no landing.
  bool read_in_place = true;
  // Work lent across ranks of a node (docs/runtime.md, "Lending tasks"): a rank
  // with nothing to run asks a rank whose collection storage it maps for ready
  // tasks; that rank lends half its queued tasks, those of lowest priority whose
  // every flow lies in the storage of the two ranks. The borrower runs each body
  // on the memory where its data lies and hands the task back;
  // the owner finishes it (releases its successors) as its own; an output the body
  // made anew (TaskContext::allocate) goes back with it, copied. Needs storage_of.
  bool lend = false;
};

struct Stats {
  std::int64_t tasks = 0;             // tasks run on this rank
  std::int64_t activations_sent = 0;  // activation messages (one per task and destination)
  std::int64_t eager_bytes = 0;       // payload bytes sent inside activations
  std::int64_t rendezvous_bytes = 0;  // payload bytes sent by rendezvous
  std::int64_t steals = 0;
  std::int64_t placeholder_hits = 0;   // tasks run from a worker's placeholder slot
  std::int64_t rendezvous_peak = 0;    // most rendezvous receives in flight at once
  std::int64_t gets_sent = 0;          // GET requests for rendezvous data (none with Options::push)
  std::int64_t tiles_read = 0;     // own collection tiles sent to other ranks' readers (once per rank)
  std::int64_t tiles_written = 0;  // outputs sent to collection tiles of other ranks
  std::int64_t read_in_place = 0;  // outputs other ranks read in this rank's storage (Options::read_in_place)
  std::int64_t lent = 0;           // this rank's tasks run by other ranks (Options::lend; not in `tasks`)
  std::int64_t borrowed = 0;       // tasks of other ranks run here (Options::lend; not in `tasks`)
  double seconds = 0;                 // wall time of run() on this rank
  // Time this rank's workers spent in task bodies, summed over the workers: busy /
  // (seconds x threads) is the rank's utilization; a rank well below the others
  // waited for them (docs/apps.md, "Where 2 ranks lose to 2 threads").
  double busy_seconds = 0;
};

// Runs `graph` to completion on every rank of `comm` (collective). Each rank runs
// the tasks whose affinity is its rank, with options.threads workers plus the
// calling thread as the communication thread; on a communicator of one rank there
// is no communication thread and the calling thread is one of the workers.
// Preconditions: the same graph and options on every rank; MPI initialized with
// MPI_THREAD_MULTIPLE when options.comm_mode == CommMode::multiple, or
// CommMode::workers with more than one thread (CommMode::workers: no communication
// thread; the calling thread is worker 0).
// Throws redist::Error with the same message on every rank when the graph is
// invalid (an input nobody produces, an output nobody expects, an affinity outside
// the communicator, a collection tile written twice) or a task body throws.
Stats run(TaskGraph& graph, MPI_Comm comm, const Options& options = {});

}  // namespace redist::runtime
