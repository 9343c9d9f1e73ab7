/* First calls through libredist_scalapack, for profiling (docs/benchmarks.md,
 * "The ScaLAPACK drop-in"): `redist bench dropin`'s small case, a 100x100
 * matrix of doubles in 32x32 blocks on a 1 x P grid to 25x25 blocks on a P x 1
 * grid, through Cpdgemr2d. One call first (the union's communicator and the
 * library's state are made then), then CALLS calls each after
 * redist_scalapack_free_plans(): planning and the first execute every time.
 * Only those calls are instrumented under callgrind (instruction counts, the
 * same from one run to the next on a noisy machine):
 *
 *   mpicc -O2 -Iinclude bench/dropin_first_call.c -o build/dropin_first_call \
 *     -Lbuild/src -Wl,-rpath,$PWD/build/src -lredist_scalapack -lscalapack-openmpi
 *   valgrind --tool=callgrind --instr-atstart=no build/dropin_first_call 10
 *   callgrind_annotate --inclusive=yes callgrind.out.<pid>
 *
 * Outside valgrind it prints the mean time of one first call (CALLS, default
 * 100); a second argument `cached` keeps the plan (no free between calls). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "redist/blacs.h"
#include "redist/scalapack.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int calls = argc > 1 ? atoi(argv[1]) : 100;
  const int cached = argc > 2 && strcmp(argv[2], "cached") == 0;
  const int n = 100, nba = 32, nbb = 25, zero = 0;
  int all = 0, ga = 0, gb = 0;
  Cblacs_get(0, 0, &all);
  Cblacs_gridinit(&all, "R", 1, p);
  Cblacs_get(0, 0, &ga);
  Cblacs_gridinit(&ga, "R", 1, p);
  Cblacs_get(0, 0, &gb);
  Cblacs_gridinit(&gb, "C", p, 1);
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ga, &nprow, &npcol, &myrow, &mycol);
  const int ra = numroc_(&n, &nba, &myrow, &zero, &nprow), ca = numroc_(&n, &nba, &mycol, &zero, &npcol);
  Cblacs_gridinfo(gb, &nprow, &npcol, &myrow, &mycol);
  const int rb = numroc_(&n, &nbb, &myrow, &zero, &nprow), cb = numroc_(&n, &nbb, &mycol, &zero, &npcol);
  const int lda = ra > 0 ? ra : 1, ldb = rb > 0 ? rb : 1;
  double* a = calloc((size_t)(lda * (ca > 0 ? ca : 1)), sizeof(double));
  double* b = calloc((size_t)(ldb * (cb > 0 ? cb : 1)), sizeof(double));
  int desca[9] = {1, ga, n, n, nba, nba, 0, 0, lda}, descb[9] = {1, gb, n, n, nbb, nbb, 0, 0, ldb};

  Cpdgemr2d(n, n, a, 1, 1, desca, b, 1, 1, descb, all);
  MPI_Barrier(MPI_COMM_WORLD);
  CALLGRIND_START_INSTRUMENTATION;
  const double t0 = MPI_Wtime();
  for (int k = 0; k < calls; ++k) {
    if (!cached) redist_scalapack_free_plans();
    Cpdgemr2d(n, n, a, 1, 1, desca, b, 1, 1, descb, all);
  }
  const double t = MPI_Wtime() - t0;
  CALLGRIND_STOP_INSTRUMENTATION;
  if (rank == 0) printf("%d %s calls on %d ranks: %.2f us per call\n", calls, cached ? "cached" : "first", p, 1e6 * t / calls);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
