#include "exec/threads.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "kernels/copy.hpp"

namespace redist::detail {
namespace {

// Between two tests of a wait that began at t0: the first 100 us spin (a short
// wait costs what MPI's costs), then this core sleeps between tests (10 us asked,
// some 60 us with the kernel's timer slack), so that the scheduler moves a
// runnable copy thread of another rank onto it; sched_yield() alone kept it here
// (the kernel yields only to threads queued on this core): 15-17 ms against 9-11.
void idle(double t0) {
  if (MPI_Wtime() - t0 < 100e-6) return;
  const timespec t{0, 10'000};
  nanosleep(&t, nullptr);
}

}  // namespace

index_t env_number(const char* name, index_t fallback, index_t lo, index_t hi, const char* what, std::string& err) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long k = std::strtoll(v, &end, 10);
  if (*end || k < lo || k > hi) {
    err = cat(name, "=", v, ": expected ", what, " from ", lo, " to ", hi);
    return fallback;
  }
  return static_cast<index_t>(k);
}

bool env_off(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::strcmp(v, "1") == 0) return false;
  if (std::strcmp(v, "0") == 0) return true;
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(name).second)
    std::fprintf(stderr, "redist: warning: %s=%s is neither 0 (off) nor 1 (on): left on\n", name, v);
  return false;
}

CopyThreads copy_threads_from(int requested, std::string& err) {
  constexpr int kMaxThreads = 1024;
  CopyThreads c;
  if (requested < 0 || requested > kMaxThreads) {
    err = cat("options.copy_threads must be from 0 to ", kMaxThreads, " (0: $REDIST_COPY_THREADS, else 1), got ",
              requested);
    return c;
  }
  c.threads = requested > 0 ? requested
                            : static_cast<int>(env_number("REDIST_COPY_THREADS", 1, 1, kMaxThreads,
                                                          "a number of copy threads per rank", err));
  if (err.empty())
    c.part_min = env_number("REDIST_COPY_PART_BYTES", c.part_min, 1, index_t{1} << 50,
                            "the smallest part of a copy phase in bytes", err);
  return c;
}

int copy_parts(const PlanCore& p, index_t bytes) {
  if (p.copy.threads <= 1 || bytes < 2 * p.copy.part_min) return 1;
  return static_cast<int>(std::min<index_t>(p.copy.threads, bytes / p.copy.part_min));
}

void for_parts(int parts, const std::function<void(int)>& part) {
  if (parts <= 1) {
    part(0);
    return;
  }
  std::vector<std::exception_ptr> failed(static_cast<size_t>(parts));
  auto run = [&](int t) {
    try {
      part(t);
    } catch (...) {
      failed[static_cast<size_t>(t)] = std::current_exception();
    }
    stream_fence();
  };
  std::vector<std::thread> team;
  team.reserve(static_cast<size_t>(parts - 1));
  int started = 1;
  try {
    for (; started < parts; ++started) team.emplace_back(run, started);
  } catch (const std::system_error&) {
    // No thread to be had (a process limit, memory for its stack): the parts
    // not started run here, after this thread's own (the same bytes either way).
  }
  run(0);
  for (int t = started; t < parts; ++t) run(t);
  for (std::thread& th : team) th.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

// The MPI calls below return their codes to the caller's check_wait: unchecked here.
int wait_all(const PlanCore& p, int n, MPI_Request* req, MPI_Status* status) {
  if (p.copy.threads <= 1) return MPI_Waitall(n, req, status);  // unchecked here
  for (const double t0 = MPI_Wtime();;) {
    int done = 0;
    const int rc = MPI_Testall(n, req, &done, status);  // unchecked here
    if (rc != MPI_SUCCESS || done) return rc;
    idle(t0);
  }
}

int wait_some(const PlanCore& p, int n, MPI_Request* req, int* count, int* index, MPI_Status* status) {
  if (p.copy.threads <= 1) return MPI_Waitsome(n, req, count, index, status);  // unchecked here
  for (const double t0 = MPI_Wtime();;) {
    const int rc = MPI_Testsome(n, req, count, index, status);  // unchecked here
    if (rc != MPI_SUCCESS || *count != 0) return rc;
    idle(t0);
  }
}

}  // namespace redist::detail
