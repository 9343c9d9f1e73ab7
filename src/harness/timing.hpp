// Interleaved timing (the harness's, for `redist run`, every bench suite and the
// tests that compare methods): one measured method and the loop that times many.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "harness/watchdog.hpp"

namespace redist::harness {

struct Method {
  std::string name;
  std::function<void()> run;
  std::vector<double> times;  // seconds per run, the slowest rank's
  double median() const;
  double min() const;
};

// Runs the methods interleaved so that machine noise hits all alike, in a new
// order each round (a shuffle seeded by the round: the same on every rank). In
// a fixed order, or a rotated one, each method always follows the same one and
// inherits its cache state: `auto`, after `direct`, timed 10-30% faster than
// the strategy it ran. A barrier before each run; a run's time is the slowest
// rank's. `after_round(r)`, when given, runs after round r (0-based), e.g. to
// show progress. Each run, its barrier and its reduction are one step of
// `watchdog` when given. Collective over `comm`.
void time_interleaved(std::vector<Method>& methods, int reps, MPI_Comm comm,
                      const std::function<void(int)>& after_round = {}, Watchdog* watchdog = nullptr);

double median(std::vector<double> v);

}  // namespace redist::harness
