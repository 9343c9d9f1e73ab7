// A plan used after MPI_Finalize: execute and predictions throw redist::Error
// saying so (Open MPI aborted the job from inside the first MPI call before),
// and the plan is destroyed without a fault; make_plan before MPI_Init and after
// MPI_Finalize throws too. Its own main: MPI starts and ends mid-test.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "redist/redist.hpp"
#include "redist/shm.hpp"

int main(int argc, char** argv) {
  int failures = 0, rank = 0;
  // `call` must throw redist::Error whose message says `when` ("before MPI_Init",
  // "after MPI_Finalize"): Open MPI aborted the job inside its first MPI call there.
  auto expect_error = [&](const char* what, const char* when, auto&& call) {
    try {
      call();
      std::printf("rank %d: %s %s did not throw\n", rank, what, when);
      ++failures;
    } catch (const redist::Error& e) {
      if (std::string(e.what()).find(std::string(what) + " " + when) == std::string::npos) {
        std::printf("rank %d: %s %s: unexpected message: %s\n", rank, what, when, e.what());
        ++failures;
      }
    }
  };
  expect_error("make_plan", "before MPI_Init", [] {
    (void)redist::make_plan(redist::Layout::parse("4x4 tile=2x2"), redist::Layout::parse("4x4 tile=4x4"),
                            redist::Region::parse("4x4"), MPI_COMM_WORLD);
  });
  expect_error("shared_allocate", "before MPI_Init", [] { (void)redist::shared_allocate(MPI_COMM_WORLD, 8); });
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string grid = std::to_string(size);
  const redist::Layout src = redist::Layout::parse("20x12 tile=3x4 block_cyclic grid=1x" + grid);
  const redist::Layout dst = redist::Layout::parse("20x12 tile=5x2 block_cyclic grid=" + grid + "x1");
  redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD);
  std::vector<double> a(static_cast<size_t>(redist::LocalIndex(src, rank).elements()), 1.0);
  std::vector<double> b(static_cast<size_t>(redist::LocalIndex(dst, rank).elements()), 0.0);
  plan.execute(a, b);  // works while MPI runs
  void* window = redist::shared_allocate(MPI_COMM_WORLD, 64);  // left alive: MPI_Finalize ends it
  MPI_Finalize();
  expect_error("execute", "after MPI_Finalize", [&] { plan.execute(a, b); });
  expect_error("predictions", "after MPI_Finalize", [&] { (void)plan.predictions(); });
  expect_error("shared_free", "after MPI_Finalize", [&] { redist::shared_free(window); });  // Open MPI aborted the job
  expect_error("make_plan", "after MPI_Finalize", [&] { (void)redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD); });
  std::printf("plan_after_finalize: rank %d: %s\n", rank, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}  // the plan is destroyed here, after MPI_Finalize
