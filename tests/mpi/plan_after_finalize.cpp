// A plan used after MPI_Finalize: execute and predictions throw redist::Error
// saying so (Open MPI aborted the job from inside the first MPI call before),
// and the plan is destroyed without a fault. Its own main: MPI ends mid-test.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "redist/redist.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string grid = std::to_string(size);
  const redist::Layout src = redist::Layout::parse("20x12 tile=3x4 block_cyclic grid=1x" + grid);
  const redist::Layout dst = redist::Layout::parse("20x12 tile=5x2 block_cyclic grid=" + grid + "x1");
  redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD);
  std::vector<double> a(static_cast<size_t>(redist::LocalIndex(src, rank).elements()), 1.0);
  std::vector<double> b(static_cast<size_t>(redist::LocalIndex(dst, rank).elements()), 0.0);
  plan.execute(a, b);  // works while MPI runs
  MPI_Finalize();
  int failures = 0;
  auto expect_error = [&](const char* what, auto&& call) {
    try {
      call();
      std::printf("rank %d: %s after MPI_Finalize did not throw\n", rank, what);
      ++failures;
    } catch (const redist::Error& e) {
      if (std::string(e.what()).find("after MPI_Finalize") == std::string::npos) {
        std::printf("rank %d: %s: unexpected message: %s\n", rank, what, e.what());
        ++failures;
      }
    }
  };
  expect_error("execute", [&] { plan.execute(a, b); });
  expect_error("predictions", [&] { (void)plan.predictions(); });
  std::printf("plan_after_finalize: rank %d: %s\n", rank, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}  // the plan is destroyed here, after MPI_Finalize
