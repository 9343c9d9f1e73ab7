// The cases of each redist-bench suite (paper 000 sec. 8, paper 001 sec. 3.3),
// scaled to a small machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "redist/exec.hpp"

namespace redist::bench {

// One more method of a taskgraph suite: the strategy with other switches
// (paper 000 sec. 6.2), timed beside the default `taskgraph` on the same storage.
struct Variant {
  std::string name;  // "taskgraph batch=auto"
  TaskgraphOptions opt;
};

struct Case {
  std::string suite, series, name;  // series: a line of the suite's plot
  double x = 0;                      // the plot's abscissa (a tile size, K, ...)
  std::string x_label;
  std::string src, dst, region;      // spec strings; region empty: the whole array
  bool alltoall = false;             // also time MPI_Alltoall of the same volume
  std::vector<std::string> strategies = {};  // the strategies to time; empty: every one and auto
  // Taskgraph suites: `taskgraph` (base) and these variants, plus p2p for scale;
  // `theory`: the speedup the last variant should have over the base at most
  // (dynamic_volume: MBs/MBt * NBs/NBt), 0 for none.
  TaskgraphOptions base{};
  std::vector<Variant> variants{};
  double theory = 0;
  // Two process groups (paper 002; docs/groups.md): the first `senders` ranks send
  // with `src`, the others (every rank with `overlap`) receive with `dst`; 0: one group.
  int senders = 0;
  bool overlap = false;
  // Where the arrays live: in MPI-3 shared windows (redist::shared_allocate;
  // docs/shm.md) or on the heap; unset: as $REDIST_STORAGE says.
  std::optional<bool> shared_storage{};
  // Time the single-copy limit beside the methods (harness::CaseRun::add_single_copy):
  // x1copy is then the ratio to a copy measured in the same rounds.
  bool single_copy = false;
  // The `dropin` suite (libredist_scalapack): pdgemr2d_ through the drop-in beside
  // ScaLAPACK's own, each method making this many calls per timed run; 0: not such a case.
  int dropin_calls = 0;
  // The `blocksize` suite (paper 001 Fig. 13): K of the r -> K*r case; the
  // synchronized simple, random and optimal schedules are timed beside the
  // strategies (bench/paper001.hpp); 0: not such a case.
  int paper_k = 0;
  // The `memory` suite (issue 10): budgets as fractions of the busiest rank's
  // moved volume; each of `budget_strategies` also runs on a plan of its own
  // made with that budget (Options::max_buffer_bytes), beside the unbudgeted
  // strategies, and the measured buffers of each (Plan::buffer_bytes) are
  // printed per rank.
  std::vector<double> budgets{};
  std::vector<std::string> budget_strategies{};
  // The `threads` suite (Options::copy_threads): each of `thread_strategies` also
  // runs on a plan of its own with `copy_threads` copy threads per rank (bench's
  // --copy-threads), beside the same strategy on one thread; the case's other
  // methods run on one.
  std::vector<std::string> thread_strategies{};
  int copy_threads = 0;
};

// Suite names in the order `all` runs them.
const std::vector<std::string>& suite_names();
// The taskgraph optimization suites (paper 000 sec. 8.2), what `taskgraph` runs.
const std::vector<std::string>& taskgraph_suite_names();
// The cases of `suite` ("all": every suite) for `ranks` ranks, sizes times
// `scale`. `smoke`: the first and last case of each suite only. Empty for an
// unknown suite.
// `threads`: the taskgraph strategy's worker threads per rank (--threads).
std::vector<Case> make_suite(const std::string& suite, int ranks, double scale, bool smoke, int threads = 1);

}  // namespace redist::bench
