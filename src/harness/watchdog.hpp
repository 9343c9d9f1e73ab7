// A watchdog for collective steps (`redist run --timeout`, docs/strategies.md,
// "Faults"): a rank whose step (make_plan, one execute, one verification...)
// runs past the limit is almost always waiting on a peer that stopped, hangs, or
// is gone while the launcher keeps the job alive. The watchdog ends the job
// instead of letting it hang: it prints on that rank
//   "<who>: rank R: <step> exceeded --timeout S s (<what to check>)"
// to stderr and calls MPI_Abort(MPI_COMM_WORLD, kFaultExit).
//
// It is a thread that sleeps on a condition variable until the armed step's
// deadline: no polling, no CPU while the step runs (ranks bound to one core keep
// it). MPI_Abort is called from that thread while the main thread is inside MPI,
// which the standard allows only under MPI_THREAD_MULTIPLE (MPI 4.1, "MPI and
// Threads", MPI_INIT_THREAD: under MPI_THREAD_FUNNELED only the main thread may
// call MPI): the constructor refuses a lower thread level.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace redist::harness {

// The exit code of a job ended by a fault: the watchdog, or an MPI error in
// `redist` (MPI_Abort's errorcode; mpirun returns it). 2 is bad input, 1 a
// wrong result.
inline constexpr int kFaultExit = 3;

class Watchdog {
 public:
  // `who` starts the message ("redist run"), `rank` is MPI_COMM_WORLD's. Throws
  // redist::Error (local: every rank has the same thread level) unless MPI was
  // initialised with MPI_THREAD_MULTIPLE, or seconds < 1.
  Watchdog(int seconds, std::string who, int rank);
  ~Watchdog();  // stops and joins the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts timing `step` (replacing the step armed before, if any).
  void arm(std::string step);
  void disarm();

  // Arms a step for the length of a scope; a null watchdog does nothing.
  class Step {
   public:
    Step(Watchdog* w, std::string step) : w_(w) {
      if (w_) w_->arm(std::move(step));
    }
    ~Step() {
      if (w_) w_->disarm();
    }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    Watchdog* w_;
  };

 private:
  void watch();
  [[noreturn]] void fire(const std::string& step);

  using Clock = std::chrono::steady_clock;
  const int seconds_;
  const std::string who_;
  const int rank_;
  std::mutex m_;
  std::condition_variable cv_;
  std::string step_;             // armed step, empty when disarmed
  Clock::time_point deadline_;
  std::uint64_t generation_ = 0;  // counts arm() calls: the thread sees a new step
  bool idle_ = false;             // the thread waits without a deadline (needs a notify)
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace redist::harness
