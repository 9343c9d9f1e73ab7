/* A C program as a ScaLAPACK user writes it, linked against libredist_scalapack
 * before ScaLAPACK: a 50x37 matrix of doubles in 4x3 blocks on a P x 1 grid moves
 * to 5x7 blocks on a 1 x P grid whose processes are placed in reverse order
 * (Cblacs_gridmap), each process with an LLD of its own above its local rows.
 * Every element received is checked against its global index. Then the strictly
 * lower triangle of A (Cpdtrmr2d, uplo 'L', diag 'U') into a B of zeros: the
 * elements below the diagonal must be A's, the others still 0.
 *
 *   user_program            the moves above; exits 1 on a wrong element
 *   user_program bad-ia     ia = 40 for a 20-row submatrix of 50 rows: the
 *                           library prints why once and stops the program
 *   user_program bad-uplo   Cpdtrmr2d with uplo 'X': the same
 *   user_program bad-free   only the last process calls redist_scalapack_free_plans()
 *                           before the first move (every process must, alike,
 *                           or their kept plans differ): the same
 *   user_program bad-rsrc   descA[RSRC] = P + 1, outside the P x 1 grid, on every
 *                           process: named as such (it was reported as a bad LLD)
 *   user_program bad-ictxt  process 0, in both grids, passes -1 as the union
 *                           context: it stops the program (it returned at once,
 *                           the others waited for it forever) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/blacs.h" /* the BLACS prototypes (ScaLAPACK ships no header) */
#include "redist/scalapack.h"

/* Local index -> global index along one dimension of a block-cyclic layout. */
static int global_of(int local, int nb, int iproc, int isrc, int nprocs) {
  const int mine = (nprocs + iproc - isrc) % nprocs;
  return (local / nb * nprocs + mine) * nb + local % nb;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int bad = argc > 1 && strcmp(argv[1], "bad-ia") == 0;
  const int bad_uplo = argc > 1 && strcmp(argv[1], "bad-uplo") == 0;
  const int bad_free = argc > 1 && strcmp(argv[1], "bad-free") == 0;
  const int bad_lld = argc > 1 && strcmp(argv[1], "bad-lld") == 0;
  const int bad_ictxt = argc > 1 && strcmp(argv[1], "bad-ictxt") == 0;
  const int bad_rsrc = argc > 1 && strcmp(argv[1], "bad-rsrc") == 0;
  const int bad_ctxt = argc > 1 && strcmp(argv[1], "bad-ctxt") == 0;
  const int M = 50, N = 37, mba = 4, nba = 3, mbb = 5, nbb = 7, zero = 0;

  int ga = 0, gb = 0, all = 0;
  Cblacs_get(0, 0, &all);
  Cblacs_gridinit(&all, "R", 1, p);
  Cblacs_get(0, 0, &ga);
  Cblacs_gridinit(&ga, "C", p, 1);
  int* reversed = malloc(sizeof(int) * (size_t)p);
  for (int i = 0; i < p; ++i) reversed[i] = p - 1 - i;
  Cblacs_get(0, 0, &gb);
  Cblacs_gridmap(&gb, reversed, 1, 1, p);
  free(reversed);

  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ga, &nprow, &npcol, &myrow, &mycol);
  const int ra = numroc_(&M, &mba, &myrow, &zero, &nprow), ca = numroc_(&N, &nba, &mycol, &zero, &npcol);
  const int lda = (ra > 0 ? ra : 1) + rank; /* each process its own LLD */
  double* a = malloc(sizeof(double) * (size_t)(lda * (ca > 0 ? ca : 1)));
  for (int j = 0; j < ca; ++j)
    for (int i = 0; i < ra; ++i)
      a[i + j * lda] = global_of(i, mba, myrow, 0, nprow) + 1000.0 * global_of(j, nba, mycol, 0, npcol);
  int desca[9] = {1, bad_ctxt ? 12345 : ga, M, N, mba, nba, bad_rsrc ? p + 1 : 0, 0, bad_lld && rank == p - 1 ? ra - 1 : lda};

  int brow, bcol;
  Cblacs_gridinfo(gb, &nprow, &npcol, &brow, &bcol);
  const int rb = numroc_(&M, &mbb, &brow, &zero, &nprow), cb = numroc_(&N, &nbb, &bcol, &zero, &npcol);
  const int ldb = (rb > 0 ? rb : 1) + 2 * rank + 1;
  double* b = calloc((size_t)(ldb * (cb > 0 ? cb : 1)), sizeof(double));
  int descb[9] = {1, gb, M, N, mbb, nbb, 0, 0, ldb};

  if (bad_free && rank == p - 1) redist_scalapack_free_plans();
  Cpdgemr2d(bad ? 20 : M, N, a, bad ? 40 : 1, 1, desca, b, 1, 1, descb, bad_ictxt && rank == 0 ? -1 : all);

  long wrong = 0;
  for (int j = 0; j < cb; ++j)
    for (int i = 0; i < rb; ++i)
      wrong += b[i + j * ldb] != global_of(i, mbb, brow, 0, nprow) + 1000.0 * global_of(j, nbb, bcol, 0, npcol);
  char lower[] = "L", unit[] = "U", unknown[] = "X";
  for (int k = 0; k < ldb * cb; ++k) b[k] = 0.0;
  Cpdtrmr2d(bad_uplo ? unknown : lower, unit, M, N, a, 1, 1, desca, b, 1, 1, descb, all);
  for (int j = 0; j < cb; ++j)
    for (int i = 0; i < rb; ++i) {
      const int gi = global_of(i, mbb, brow, 0, nprow), gj = global_of(j, nbb, bcol, 0, npcol);
      wrong += b[i + j * ldb] != (gi > gj ? gi + 1000.0 * gj : 0.0);
    }
  printf("rank %d: %d x %d local elements of B, %ld wrong\n", rank, rb, cb, wrong);
  free(a);
  free(b);
  Cblacs_freebuff(ga, 1);
  Cblacs_gridexit(ga);
  Cblacs_freebuff(gb, 1);
  Cblacs_gridexit(gb);
  Cblacs_freebuff(all, 1);
  Cblacs_gridexit(all);
  MPI_Finalize();
  return wrong != 0;
}
