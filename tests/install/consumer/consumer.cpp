// A C++ program against the installed redist: rows of a 10x7 matrix of doubles on
// rank 0 dealt out in blocks of 3 to every rank; each rank checks its rows.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include <redist/cost.hpp>
#include <redist/redist.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  long wrong = 0;
  {
    const redist::Layout src = redist::Layout::parse("10x7");
    const redist::Layout dst = redist::Layout::parse("10x7 tile=3x7 block_cyclic grid=" + std::to_string(p) + "x1");
    // Options as the docs write them, designated (compiled with -Werror=missing-field-initializers).
    redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD,
                                          redist::Options{.strategy = "p2p"});
    // The other public aggregates, designated as well (compiled, not used).
    [[maybe_unused]] const redist::Machine machine{.bnet = 1e9};
    [[maybe_unused]] const redist::PlacementParams placement{.rule = redist::PlacementRule::balanced};
    std::vector<double> a(rank == 0 ? 70 : 1), b(70, -1.0);
    for (int k = 0; rank == 0 && k < 70; ++k) a[k] = k % 10 + 1000.0 * (k / 10);
    plan.execute(a.data(), b.data());
    // storage=tile: this rank's tiles one after another, each 3 (or 1) rows x 7, column-major.
    size_t at = 0;
    for (int t = rank; t * 3 < 10; t += p) {
      const int rows = t * 3 + 3 <= 10 ? 3 : 10 - t * 3;
      for (int j = 0; j < 7; ++j)
        for (int r = 0; r < rows; ++r) wrong += b[at + r + j * rows] != t * 3 + r + 1000.0 * j;
      at += static_cast<size_t>(rows) * 7;
    }
  }
  std::printf("consumer (C++) rank %d: %ld wrong\n", rank, wrong);
  MPI_Finalize();
  return wrong != 0;
}
