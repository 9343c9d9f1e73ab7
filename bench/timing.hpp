// Shared by the benchmarks (redist-compare, redist-bench, `redist run`): one measured method,
// interleaved timing and the facts about the run that a result must carry.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace redist::bench {

struct Method {
  std::string name;
  std::function<void()> run;
  std::vector<double> times;  // seconds per run, the slowest rank's
  bool verified = false;
  double median() const {
    auto t = times;
    std::sort(t.begin(), t.end());
    return t.empty() ? 0 : t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  }
  double min() const { return times.empty() ? 0 : *std::min_element(times.begin(), times.end()); }
};

// Runs the methods interleaved so that machine noise hits all alike, in a new
// order each round (a shuffle seeded by the round: the same on every rank). In
// a fixed order, or a rotated one, each method always follows the same one and
// inherits its cache state: `auto`, after `direct`, timed 10-30% faster than
// the executor it ran. A barrier before each run; a run's time is the slowest
// rank's. `after_round(r)`, when given, runs after round r (0-based), e.g. to
// show progress.
inline void time_interleaved(std::vector<Method>& methods, int reps, MPI_Comm comm,
                             const std::function<void(int)>& after_round = {}) {
  std::vector<size_t> order(methods.size());
  for (int r = 0; r < reps; ++r) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937 shuffle_rng(static_cast<unsigned>(r) + 1);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (size_t i : order) {
      Method& me = methods[i];
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      me.run();
      double t = MPI_Wtime() - t0, tmax = 0;
      MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
      me.times.push_back(tmax);
    }
    if (after_round) after_round(r);
  }
}

// Where and with what a result was measured (rank 0's view).
struct RunInfo {
  std::string hostname, compiler = __VERSION__, mpi_library, date, build_type;
  unsigned cores = std::thread::hardware_concurrency();
  int ranks = 0;
};

inline RunInfo run_info(MPI_Comm comm) {
  RunInfo info;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  info.hostname = host;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(lib, &len);
  info.mpi_library = std::string(lib, static_cast<size_t>(len));
  while (!info.mpi_library.empty() && (info.mpi_library.back() == '\n' || info.mpi_library.back() == '\0'))
    info.mpi_library.pop_back();
  char date[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  info.date = date;
#ifdef REDIST_BUILD_TYPE
  info.build_type = REDIST_BUILD_TYPE;
#endif
  MPI_Comm_size(comm, &info.ranks);
  return info;
}

}  // namespace redist::bench
