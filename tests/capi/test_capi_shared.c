/* Storage in shared windows from C (redist_shared_allocate, redist_shared_free):
 * the memory is zeroed, and a redistribution between arrays there (shm and auto,
 * with ragged tiles and ScaLAPACK storage) gives bit for bit what p2p gives
 * between copies of the same values on the heap, in both directions; bad
 * arguments get the same status and message on every rank, *ptr NULL. */
#include <mpi.h>

#include "capi_test.h"

/* This rank's elements of `spec` (storage of one buffer). */
static int64_t local_elements(const char* spec) {
  redist_layout* l = NULL;
  int64_t n = -1;
  CHECK(redist_layout_create(spec, &l) == REDIST_SUCCESS, "%s", redist_last_error());
  CHECK(redist_layout_local_size(l, test_rank, NULL, &n) == REDIST_SUCCESS, "%s", redist_last_error());
  redist_layout_free(l);
  return n;
}

/* Moves src to dst with `strategy` (the plan's: auto's model is made with the
   plan); counts a failure when a call fails. */
static void move(const char* from, const char* to, const double* src, double* dst, const char* strategy) {
  redist_plan* plan = NULL;
  redist_options o = {0};
  redist_status st;
  o.strategy = strategy;
  st = redist_make_plan_spec(from, to, NULL, MPI_COMM_WORLD, &o, &plan);
  CHECK(st == REDIST_SUCCESS, "make_plan %s -> %s: %s", from, to, redist_last_error());
  if (st == REDIST_SUCCESS) {
    st = redist_execute_buffers(plan, src, dst, NULL);
    CHECK(st == REDIST_SUCCESS, "execute %s: %s", strategy, redist_last_error());
  }
  redist_plan_free(plan);
}

static int same_doubles(const double* a, const double* b, int64_t n) {
  return n == 0 || memcmp(a, b, (size_t)n * sizeof(double)) == 0;
}

int main(int argc, char** argv) {
  char a_spec[160], b_spec[160];
  const char* strategies[] = {"shm", "auto"};
  int cases = 0, s;
  int64_t na, nb, i;
  double *a = NULL, *b = NULL, *heap_a, *heap_b, *back;
  void* p = NULL;
  redist_status st;
  test_init(&argc, &argv);
  snprintf(a_spec, sizeof a_spec, "37x29 tile=5x4 block_cyclic grid=1x%d storage=local_array", test_ranks);
  snprintf(b_spec, sizeof b_spec, "37x29 tile=6x7 block_cyclic grid=%dx1", test_ranks);
  na = local_elements(a_spec);
  nb = local_elements(b_spec);
  CHECK(redist_shared_allocate(MPI_COMM_WORLD, na * 8, &p) == REDIST_SUCCESS, "%s", redist_last_error());
  a = (double*)p;
  CHECK(redist_shared_allocate(MPI_COMM_WORLD, nb * 8, &p) == REDIST_SUCCESS, "%s", redist_last_error());
  b = (double*)p;
  heap_a = (double*)malloc((size_t)(na + 1) * 8);
  heap_b = (double*)malloc((size_t)(nb + 1) * 8);
  back = (double*)malloc((size_t)(na + 1) * 8);
  if (!a || !b || !heap_a || !heap_b || !back) {
    fprintf(stderr, "rank %d: allocation failed\n", test_rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (i = 0; i < nb; ++i) CHECK(b[i] == 0.0, "element %lld of a fresh window is %g, not 0", (long long)i, b[i]);
  ++cases;

  for (s = 0; s < 2; ++s) {
    /* distinct values, so that an element moved to the wrong place shows */
    for (i = 0; i < na; ++i) a[i] = heap_a[i] = 1000000.0 * test_rank + (double)i + 0.25 * s;
    for (i = 0; i < nb; ++i) b[i] = -1.0, heap_b[i] = -2.0;
    move(a_spec, b_spec, heap_a, heap_b, "p2p");
    move(a_spec, b_spec, a, b, strategies[s]);
    CHECK(same_doubles(b, heap_b, nb), "%s from a window into a window differs from p2p on the heap", strategies[s]);
    /* and back, into a zeroed array: the source values again */
    for (i = 0; i < na; ++i) a[i] = 0.0, back[i] = -3.0;
    move(b_spec, a_spec, b, a, strategies[s]);
    move(b_spec, a_spec, heap_b, back, "p2p");
    CHECK(same_doubles(a, back, na) && same_doubles(a, heap_a, na), "%s back differs", strategies[s]);
    cases += 2;
  }
  CHECK(redist_shared_free(a) == REDIST_SUCCESS, "%s", redist_last_error());
  CHECK(redist_shared_free(b) == REDIST_SUCCESS, "%s", redist_last_error());
  CHECK(redist_shared_free(NULL) == REDIST_SUCCESS, "NULL: %s", redist_last_error());
  cases += 1;

  /* bad arguments: agreed, *ptr NULL */
  p = heap_a;
  st = redist_shared_allocate(MPI_COMM_WORLD, test_rank == test_ranks - 1 ? -8 : 64, &p);
  check_agreed("negative bytes on the last rank", st, REDIST_ERR_INVALID_ARGUMENT, "bytes must be >= 0, got -8");
  CHECK(p == NULL, "*ptr not NULL after a failed allocation");
  st = redist_shared_allocate(MPI_COMM_WORLD, 64, test_rank == 0 ? NULL : &p);
  check_agreed("ptr NULL on rank 0", st, REDIST_ERR_INVALID_ARGUMENT, "rank 0: redist_shared_allocate: ptr is NULL");
  CHECK(test_rank == 0 || p == NULL, "*ptr not NULL after a failed allocation");
  st = redist_shared_allocate(MPI_COMM_NULL, 64, &p);
  CHECK(st == REDIST_ERR_INVALID_ARGUMENT && strstr(redist_last_error(), "comm is MPI_COMM_NULL"), "MPI_COMM_NULL: %s",
        redist_last_error());
  st = redist_shared_free(heap_a);  /* on every rank: nothing collective is reached */
  check_agreed("a heap pointer freed", st, REDIST_ERR_INVALID_ARGUMENT, "did not come from redist::shared_allocate");
  /* zero bytes on some ranks: a window all the same, freed */
  CHECK(redist_shared_allocate(MPI_COMM_WORLD, test_rank % 2 ? 0 : 24, &p) == REDIST_SUCCESS, "%s",
        redist_last_error());
  CHECK(p != NULL, "zero bytes: no pointer to free");
  CHECK(redist_shared_free(p) == REDIST_SUCCESS, "%s", redist_last_error());
  cases += 6;
  free(heap_a);
  free(heap_b);
  free(back);
  return test_finish("test_capi_shared", cases);
}
