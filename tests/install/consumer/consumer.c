/* A C99 program against the installed redist: the C API (redist.h) deals the rows
 * of a 10x7 matrix on rank 0 out in blocks of 3; then the ScaLAPACK drop-in
 * (Cpdtrmr2d) copies the upper triangle of a matrix onto another grid. Every
 * element is checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <redist/blacs.h>
#include <redist/redist.h>
#include <redist/scalapack.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  long wrong = 0;

  /* The C API. */
  char dst_spec[96];
  snprintf(dst_spec, sizeof dst_spec, "10x7 tile=3x7 storage=local_array block_cyclic grid=%dx1", p);
  redist_plan* plan = NULL;
  redist_status st = redist_make_plan_spec("10x7", dst_spec, NULL, MPI_COMM_WORLD, NULL, &plan);
  double a[70], b[70];
  for (int k = 0; k < 70; ++k) a[k] = k % 10 + 1000.0 * (k / 10), b[k] = -1.0;
  if (st == REDIST_SUCCESS) st = redist_execute_buffers(plan, a, b, NULL);
  if (st != REDIST_SUCCESS) {
    fprintf(stderr, "%s: %s\n", redist_status_name(st), redist_last_error());
    ++wrong;
  }
  redist_plan_free(plan);
  int rows = 0;
  for (int i = 0; i < 10; ++i) rows += (i / 3) % p == rank;
  for (int j = 0; st == REDIST_SUCCESS && j < 7; ++j)
    for (int r = 0; r < rows; ++r)
      wrong += b[r + j * rows] != (r / 3) * 3 * p + rank * 3 + r % 3 + 1000.0 * j;

  /* The drop-in: the upper triangle (with the diagonal) of a 6x6 matrix on a P x 1
   * grid (blocks 2x2) into B, zeros, on a 1 x P grid (blocks 1x3). */
  int ga = 0, gb = 0, all = 0, nprow, npcol, myrow, mycol, zero = 0, n = 6, two = 2, one = 1, three = 3;
  Cblacs_get(0, 0, &all);
  Cblacs_gridinit(&all, "R", 1, p);
  Cblacs_get(0, 0, &ga);
  Cblacs_gridinit(&ga, "C", p, 1);
  Cblacs_get(0, 0, &gb);
  Cblacs_gridinit(&gb, "R", 1, p);
  Cblacs_gridinfo(ga, &nprow, &npcol, &myrow, &mycol);
  const int ra = numroc_(&n, &two, &myrow, &zero, &nprow);
  double* x = malloc(sizeof(double) * 36);
  for (int j = 0; j < 6; ++j)
    for (int r = 0; r < ra; ++r) x[r + j * (ra > 0 ? ra : 1)] = ((r / 2) * nprow + myrow) * 2 + r % 2 + 100.0 * j;
  int desca[9] = {1, ga, 6, 6, 2, 2, 0, 0, ra > 0 ? ra : 1};
  Cblacs_gridinfo(gb, &nprow, &npcol, &myrow, &mycol);
  const int cb = numroc_(&n, &three, &mycol, &zero, &npcol);
  double* y = calloc(36, sizeof(double));
  int descb[9] = {1, gb, 6, 6, 1, 3, 0, 0, 6};
  char upper[] = "U", nonunit[] = "N";
  Cpdtrmr2d(upper, nonunit, 6, 6, x, 1, 1, desca, y, 1, 1, descb, all);
  for (int c = 0; c < cb; ++c)
    for (int i = 0; i < 6; ++i) {
      const int j = ((c / 3) * npcol + mycol) * 3 + c % 3;
      wrong += y[i + c * 6] != (i <= j ? i + 100.0 * j : 0.0);
    }
  (void)one;
  free(x);
  free(y);
  Cblacs_gridexit(ga);
  Cblacs_gridexit(gb);
  Cblacs_gridexit(all);
  printf("consumer (C) rank %d: %ld wrong\n", rank, wrong);
  MPI_Finalize();
  return wrong != 0;
}
