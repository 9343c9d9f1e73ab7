#include "harness/watchdog.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "redist/error.hpp"

namespace redist::harness {

Watchdog::Watchdog(int seconds, std::string who, int rank) : seconds_(seconds), who_(std::move(who)), rank_(rank) {
  if (seconds < 1) detail::fail("--timeout needs a whole number of seconds >= 1, got ", seconds);
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);  // unchecked: level stays SINGLE, refused below
  if (level < MPI_THREAD_MULTIPLE)
    detail::fail("--timeout: the watchdog thread calls MPI_Abort while the main thread is in MPI, which needs "
                 "MPI_THREAD_MULTIPLE; this MPI provides level ", level, " (MPI_THREAD_MULTIPLE is ",
                 MPI_THREAD_MULTIPLE, ")");
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

// Called between steps, outside any timed region: a lock and, only when the
// thread sleeps without a deadline, a notify. The thread sleeping towards an
// earlier deadline is not woken; it sees the new step when it wakes.
void Watchdog::arm(std::string step) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(m_);
    step_ = std::move(step);
    deadline_ = Clock::now() + std::chrono::seconds(seconds_);
    ++generation_;
    wake = idle_;
  }
  if (wake) cv_.notify_one();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(m_);
  step_.clear();
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(m_);
  while (!stop_) {
    if (step_.empty()) {
      idle_ = true;
      cv_.wait(lock, [&] { return stop_ || !step_.empty(); });
      idle_ = false;
      continue;
    }
    const std::uint64_t gen = generation_;
    if (cv_.wait_until(lock, deadline_, [&] { return stop_ || generation_ != gen || step_.empty(); })) continue;
    fire(step_);  // the same step is still armed at its deadline
  }
}

void Watchdog::fire(const std::string& step) {
  std::fprintf(stderr,
               "%s: rank %d: %s exceeded --timeout %d s (a rank stopped, hangs, died without the launcher ending the "
               "job, or is much slower than the others: see the other ranks' messages; if the case is just large, "
               "raise --timeout); ending the job\n",
               who_.c_str(), rank_, step.c_str(), seconds_);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kFaultExit);  // unchecked: it does not return
  std::_Exit(kFaultExit);  // MPI_Abort does not return; if it did, end this rank anyway
}

}  // namespace redist::harness
