// One benchmark program: REDIST_RUNTIME_BENCH names its function (CMakeLists.txt).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "redist/error.hpp"
#include "bench_util.hpp"
#include "runtime_benches.hpp"

int main(int argc, char** argv) {
  redist::runtime_bench::choose_blas_kernels(argv);  // before MPI starts (may start this program again)
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided < MPI_THREAD_MULTIPLE && rank == 0)
    std::fprintf(stderr, "warning: MPI_THREAD_MULTIPLE not provided; use --mode funneled\n");
  int rc = 1;
  try {
    rc = redist::runtime_bench::REDIST_RUNTIME_BENCH(argc, argv);
  } catch (const redist::Error& e) {
    // Bad arguments and the library's errors, the same on every rank: rank 0 speaks
    // for all, named for the program, and the exit code is 2 as `redist bench`'s.
    const char* slash = std::strrchr(argv[0], '/');
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", slash ? slash + 1 : argv[0], e.what());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
