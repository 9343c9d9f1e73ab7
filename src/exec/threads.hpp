// Copy threads per rank (Options::copy_threads, docs/strategies.md "Copy threads"):
// one copy phase of this rank (its local pieces, one peer's packing or unpacking,
// shm's push walk) cut into parts of the bytes it writes, each part on a thread of
// its own, the calling thread doing the first. No two parts write one byte (the
// plan gives each target element one source, and a part's cuts fall between
// elements), so the parts need no locks; the copy kernels write only inside the
// ranges they are given (kernels/copy.hpp), so a cache line shared by two parts
// is written by both without harm.
#pragma once

#include <functional>

#include "exec/strategy.hpp"

namespace redist::detail {

// A whole number from the environment variable `name` in [lo, hi]; `fallback`
// when unset or empty; when it is anything else, `fallback` and an error in `err`
// (naming the variable, its value and `what` it must be), for the caller to agree on.
index_t env_number(const char* name, index_t fallback, index_t lo, index_t hi, const char* what, std::string& err);

// A switch in the environment variable `name`: true when it is "0" (off). Any
// other value but "1" or empty ("off", "false") leaves it on and is named on
// stderr, once per process and variable: a warning of this rank's own, as the
// switches are read where the ranks need not meet.
bool env_off(const char* name);

// Options::copy_threads resolved (0: $REDIST_COPY_THREADS, else 1), and the
// smallest part ($REDIST_COPY_PART_BYTES, else CopyThreads' 4 MB); `err` stays
// empty when both are valid, else says why not.
CopyThreads copy_threads_from(int requested, std::string& err);

// How many parts a phase writing `bytes` is cut into on this rank: at most the
// plan's copy threads, none under the smallest part; 1 means "on this thread".
int copy_parts(const PlanCore& p, index_t bytes);

// Runs part(0 .. parts - 1), parts 1 and up on threads of their own, part 0 on
// this one; each part's streaming stores are fenced before it ends. Returns when
// all are done; rethrows the first exception a part threw. Where a thread cannot
// be started, this one runs the parts left.
void for_parts(int parts, const std::function<void(int)>& part);

// The waits of a rank with copy threads (CopyThreads::threads > 1): MPI_Waitall
// and MPI_Waitsome as tests that spin for 100 us, then sleep between tests, so
// that a rank waiting for its peers gives its core to their copy threads (Open
// MPI's waits spin: rank 0 pushing 128 MB into rank 1's window on 2 threads took
// 14.5-15.6 ms while rank 1 spun, 9.1-10.6 ms with it sleeping; docs/strategies.md).
// With one copy thread, MPI's own waits. Same arguments and result as MPI's.
int wait_all(const PlanCore& p, int n, MPI_Request* req, MPI_Status* status);
int wait_some(const PlanCore& p, int n, MPI_Request* req, int* count, int* index, MPI_Status* status);

// Where part t of n begins in `total` units, cut at multiples of `align` (the
// last part ends at `total`).
inline index_t part_begin(index_t total, int t, int n, index_t align) {
  if (t >= n) return total;
  const index_t at = static_cast<index_t>(static_cast<__int128>(total) * t / n);
  return at / align * align;
}

}  // namespace redist::detail
