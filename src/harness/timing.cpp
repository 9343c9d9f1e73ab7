#include "harness/timing.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "mpi/agree.hpp"
#include "redist/error.hpp"

namespace redist::harness {

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t.empty() ? 0 : t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

double Method::median() const { return harness::median(times); }
double Method::min() const { return times.empty() ? 0 : *std::min_element(times.begin(), times.end()); }

void time_interleaved(std::vector<Method>& methods, int reps, MPI_Comm comm,
                      const std::function<void(int)>& after_round, Watchdog* watchdog) {
  std::vector<size_t> order(methods.size());
  for (int r = 0; r < reps; ++r) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937 shuffle_rng(static_cast<unsigned>(r) + 1);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (size_t i : order) {
      Method& me = methods[i];
      Watchdog::Step step(watchdog, watchdog ? detail::cat("execute ", me.name, " (timed repetition ", r + 1, " of ",
                                                           reps, ")")
                                             : std::string());
      detail::check_mpi(MPI_Barrier(comm), "MPI_Barrier", comm);
      const double t0 = MPI_Wtime();
      me.run();
      double t = MPI_Wtime() - t0, tmax = 0;
      detail::check_mpi(MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce", comm);
      me.times.push_back(tmax);
    }
    if (after_round) after_round(r);
  }
}

}  // namespace redist::harness
