// One case harness (docs/architecture.md, "Harness"): allocate a rank's storage,
// fill, run every method, verify against the serial oracle, time interleaved,
// reduce over ranks, and hand back one CaseResult that results.hpp writes as
// JSON. `redist run`, every `redist bench` suite and the tests use it.
#pragma once

#include <mpi.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/storage.hpp"
#include "harness/timing.hpp"
#include "redist/redist.hpp"

namespace redist::harness {

// The oracle's pattern ids (harness/pattern.hpp): the source holds pattern 1, the
// target pattern 2 before a run.
inline constexpr std::uint64_t kSourcePattern = 1, kTargetPattern = 2;
// The name of CaseRun::add_single_copy's method.
inline constexpr const char* kSingleCopy = "single copy";

// A plan's statistics reduced over the ranks (collective). One vocabulary, the
// results' JSON keys (docs/results.md): `max_*` are the busiest rank's, `total_*`
// sums over ranks.
struct GlobalStats {
  index_t max_remote_bytes = 0;   // max over ranks of max(bytes sent, received): Eq. 3
  index_t max_local_bytes = 0;    // max over ranks of bytes copied locally: Eq. 5's r
  index_t max_written_bytes = 0;  // max over ranks of target bytes written (received + local)
  index_t max_message_bytes = 0;  // max over ranks of the mean message sent
  index_t total_remote_bytes = 0, total_local_bytes = 0;  // sums (remote: bytes sent)
  index_t messages = 0, segments = 0;                      // sums (sent)
  index_t runs = 0;                                        // sum of plan entries (sent and local)
  index_t max_segments_per_tile = 0;
  index_t max_plan_bytes = 0;                              // memory of the largest rank's plan
};
GlobalStats global_stats(const PlanStats& mine, MPI_Comm comm);

// Paper 000 Eq. 5 for a plan on a machine: Bnet at the plan's message size and the
// bound (0 when nothing moves between ranks: the bound does not apply).
struct Limits {
  index_t message_bytes = 0;  // where Bnet is read on the calibrated curve
  double bnet = 0, bmemcpy = 0, bound = 0;  // bytes/s
  // The single-copy limit (docs/shm.md): seconds to write every target byte once
  // (max over ranks of bytes received + copied locally) at Machine::bmemcpy_node,
  // or, when the case ran CaseRun::add_single_copy, that copy's median.
  double single_copy = 0;
  bool single_copy_measured = false;
};
Limits limits(const GlobalStats& g, const Machine& m);

// Outcome of verifying one run, summed over ranks (collective).
struct Verdict {
  index_t checked = 0, wrong = 0;
  bool ok() const { return wrong == 0; }
};
// Checks the target against the oracle and that the source kept its pattern; a
// rank with a wrong element prints the first one to stderr, prefixed by `what`.
Verdict verify(const Plan& plan, const LocalStorage& src, const LocalStorage& dst, const std::string& what);

struct MethodResult {
  std::string name;
  std::string chose;          // auto only: the strategy it ran
  double median = 0, min = 0;  // seconds, the slowest rank's
  double predicted = 0;        // the cost model's seconds, max over ranks (0: no model)
  std::optional<bool> verified;  // empty: not checked (--no-verify, a reference method)
  index_t checked = 0, wrong = 0;  // elements, summed over ranks
  std::vector<double> times;
  // Paper 002's algorithms on a case between two groups (redist bench groups):
  // messages and bytes sent by all ranks in one execute (detail::relay_counts,
  // auto: its choice's); -1 when not computed.
  index_t route_messages = -1, route_bytes = -1;
  // auto with Options::auto_trials: its trial executes, run before the warm-up,
  // in order: the strategy each ran and its seconds, the slowest rank's.
  std::vector<Plan::AutoTrial> trials;
};

struct CaseResult {
  // What was run: labels for plots (suite, a series = one line, x) and the specs.
  std::string suite, series, name, x_label;
  double x = 0;
  std::string src, dst, region;
  int ranks = 0;
  double plan_seconds = 0;  // make_plan, slowest rank
  GlobalStats stats;
  Limits limits;            // zero without a machine model
  std::string model_choice;  // the strategy with the smallest predicted time
  std::vector<MethodResult> methods;

  const MethodResult* find(const std::string& name) const;
  double bandwidth(const MethodResult& m) const;  // Eq. 3, bytes/s
  double ratio_to_bound(const MethodResult& m) const;  // 0 without a bound
  double times_single_copy(const MethodResult& m) const;  // median / the single-copy limit; 0 without one
  double speedup(const MethodResult& m) const;  // pdgemr2d's (or pdtran's) median / m's; 0 without either
  bool ok() const;  // no method found a wrong element
};

struct MeasureOptions {
  int reps = 5;     // timed runs per method, interleaved
  int warmup = 1;   // untimed runs per method first; the first is verified
  bool verify = true;
  bool inject_error = false;  // testing only: corrupt one target element of the first method
  std::function<void(int)> after_round;  // progress, after each timed round
  // When given, every collective step (each run of a method, each verification,
  // the predictions) is a step of it: a rank stuck in one past its limit ends the job.
  Watchdog* watchdog = nullptr;
};

// One case on the ranks of `comm`. The constructor is collective: it validates
// and plans (make_plan), so a bad case throws the same redist::Error on every
// rank before any storage is allocated; then it allocates both sides and fills
// the source with the oracle's pattern.
class CaseRun {
 public:
  CaseRun(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm, const Options& options = {});
  // A plan made by `make`, collective over `comm` (make_group_plan between two
  // groups that together are `comm`'s ranks): timed the same way, then storage
  // for the plan's own layouts at this rank of the plan's communicator.
  CaseRun(const std::function<Plan()>& make, MPI_Comm comm);

  Plan& plan() { return plan_; }
  const LocalStorage& source() const { return src_; }
  const LocalStorage& target() const { return dst_; }
  const GlobalStats& stats() const { return stats_; }
  double plan_seconds() const { return plan_seconds_; }

  // A strategy by name ("auto" too), run through the plan.
  void add_strategy(const std::string& name);
  // Another method on the same storage (a peer such as pdgemr2d); `verify`: it
  // must leave the oracle's result in the target.
  void add_method(const std::string& name, std::function<void()> run, bool verify = true);

  // The single-copy limit measured beside the methods, in the same rounds
  // (docs/shm.md): the method kSingleCopy streams this rank's target bytes
  // (received + copied locally) from one buffer of its own into another, every
  // rank at once, the copy of calibrate's bmemcpy_node; measure() takes its
  // median as Limits::single_copy. Collective (the buffers: every rank, or none).
  void add_single_copy();

  // Collective: auto's trials first when the plan has Options::auto_trials (so
  // that its verified run and timed rounds run the strategy it keeps), then each
  // strategy's tuning executes (Plan::tuning_executes: shm's slot stores), then
  // the warm-up (the first run of each method verified), then `reps` interleaved
  // timed rounds; predictions and limits from the plan's machine.
  CaseResult measure(const MeasureOptions& options);

 private:
  struct Entry {
    Method method;
    bool strategy, verify;
  };
  void allocate(const Layout& src, const Layout& dst, MPI_Comm comm);

  Plan plan_;
  LocalStorage src_, dst_;
  std::vector<std::byte> copy_from_, copy_to_;  // add_single_copy's
  GlobalStats stats_;
  double plan_seconds_ = 0;
  int rank_ = 0;
  std::vector<Entry> entries_;
};

// The physical memory of one node (this one's), and of the nodes of `comm`
// (collective: nodes counted by MPI_COMM_TYPE_SHARED, each taken to be this
// one's size): what a program compares a whole job's storage with before
// allocating or placing anything (CaseRun does it per node).
double node_memory_bytes();
struct JobMemory {
  int nodes = 1;
  double bytes = 0;  // nodes x node_memory_bytes()
};
JobMemory job_memory(MPI_Comm comm);

// Two process groups over `comm` (paper 002, docs/groups.md): its first `senders`
// ranks send, `src` their layout (ranks 0 .. senders-1); the others receive (all
// ranks with `overlap`), `dst` their layout. Collective; the plan is
// make_group_plan's, the storage its union's.
std::unique_ptr<CaseRun> group_case_run(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
                                        int senders, bool overlap, const Options& options = {});

}  // namespace redist::harness
