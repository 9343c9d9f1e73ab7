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
  int failures = 0;
  // make_plan before MPI_Init: an Error too (Open MPI aborted in MPI_Comm_dup).
  try {
    (void)redist::make_plan(redist::Layout::parse("4x4 tile=2x2"), redist::Layout::parse("4x4 tile=4x4"),
                            redist::Region::parse("4x4"), MPI_COMM_WORLD);
    std::printf("make_plan before MPI_Init did not throw\n");
    ++failures;
  } catch (const redist::Error& e) {
    if (std::string(e.what()).find("make_plan before MPI_Init") == std::string::npos) {
      std::printf("make_plan before MPI_Init: unexpected message: %s\n", e.what());
      ++failures;
    }
  }
  // shared_allocate before MPI_Init: an Error (Open MPI aborted the job in
  // MPI_Comm_test_inter).
  try {
    (void)redist::shared_allocate(MPI_COMM_WORLD, 8);
    std::printf("shared_allocate before MPI_Init did not throw\n");
    ++failures;
  } catch (const redist::Error& e) {
    if (std::string(e.what()).find("shared_allocate before MPI_Init") == std::string::npos) {
      std::printf("shared_allocate before MPI_Init: unexpected message: %s\n", e.what());
      ++failures;
    }
  }
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
  void* window = redist::shared_allocate(MPI_COMM_WORLD, 64);  // left alive: MPI_Finalize ends it
  MPI_Finalize();
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
  expect_error("shared_free", [&] { redist::shared_free(window); });  // Open MPI aborted the job
  expect_error("make_plan", [&] { (void)redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD); });
  std::printf("plan_after_finalize: rank %d: %s\n", rank, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}  // the plan is destroyed here, after MPI_Finalize
