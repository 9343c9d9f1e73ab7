// Paper 001 (Walker & Otto) Fig. 13's synchronized variants with the simple and
// random schedules, for the `blocksize` suite: the plan's messages sent in the
// phases of schedule::expand_simple / expand_random (phase k: process p sends
// the message that carries its block k, or its k-th in a random order). Such a
// phase is not a permutation: a process may receive from several senders in one
// phase (the contention the paper measures). Synchronized: per phase every
// receive of the phase posted, the phase's send, wait for all, unpack. `optimal`
// runs the paper's optimal schedule the same way (schedule::paper_rounds), which
// the library's `phased` strategy runs too. Bench code, not a strategy: it
// exists to reproduce the figure beside `phased`, `phased_unsync` and
// `phased_sendrecv`.
#pragma once

#include <string>
#include <vector>

#include "redist/exec.hpp"

namespace redist::bench {

enum class PaperSchedule { simple, random, optimal };

class PaperPhases {
 public:
  // Collective over the plan's communicator. `K`: the block size factor of the
  // plan's r -> K*r (or K*r -> r) case.
  PaperPhases(Plan& plan, PaperSchedule kind, int K);
  // Moves the plan's data (one block per side, as Plan::execute(const void*, void*)).
  void run(const void* src, void* dst);
  // Phases, and the most messages one rank receives in one phase (1: contention free).
  int phases() const { return static_cast<int>(send_.size()); }
  int max_receives() const { return max_receives_; }

 private:
  Plan& plan_;
  std::vector<int> send_;                // per phase: this rank's send index, -1: none
  std::vector<std::vector<int>> recv_;   // per phase: this rank's receive indices
  int max_receives_ = 0;
};

}  // namespace redist::bench
