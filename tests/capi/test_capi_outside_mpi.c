/* The C API outside MPI: redist_make_plan, redist_make_plan_spec and
 * redist_plan_predictions before MPI_Init and after MPI_Finalize return
 * REDIST_ERR_INVALID_ARGUMENT saying so (Open MPI aborted the job at their first
 * MPI call, as a new user's trial found), as the C++ API throws
 * (tests/mpi/plan_after_finalize.cpp); execute after MPI_Finalize too; the plan is
 * freed after MPI_Finalize without a fault. Its own main: MPI starts and ends
 * mid-test. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "redist/redist.h"

static int failures = 0;
static int rank = 0;

/* `status` must be REDIST_ERR_INVALID_ARGUMENT with a message holding `words`. */
static void expect(const char* what, redist_status status, const char* words) {
  if (status != REDIST_ERR_INVALID_ARGUMENT) {
    printf("rank %d: %s: status %s, expected REDIST_ERR_INVALID_ARGUMENT\n", rank, what, redist_status_name(status));
    ++failures;
  } else if (!strstr(redist_last_error(), words)) {
    printf("rank %d: %s: message lacks '%s': %s\n", rank, what, words, redist_last_error());
    ++failures;
  }
}

int main(int argc, char** argv) {
  redist_plan *plan = NULL, *other = NULL;
  redist_layout *src = NULL, *dst = NULL;
  double a[240], b[240], seconds[64];
  int size = 1, i;
  char spec_src[64], spec_dst[64];
  if (redist_layout_create("4x4 tile=2x2", &src) != REDIST_SUCCESS ||
      redist_layout_create("4x4 tile=4x4", &dst) != REDIST_SUCCESS) {
    printf("layouts need no MPI, yet: %s\n", redist_last_error());
    return 1;
  }
  expect("redist_make_plan before MPI_Init", redist_make_plan(src, dst, NULL, MPI_COMM_WORLD, NULL, &plan),
         "redist: redist_make_plan before MPI_Init: a plan communicates through MPI");
  expect("redist_make_plan_spec before MPI_Init",
         redist_make_plan_spec("4x4 tile=2x2", "4x4", NULL, MPI_COMM_WORLD, NULL, &plan),
         "redist: redist_make_plan_spec before MPI_Init");
  if (plan != NULL) {
    printf("a plan was made before MPI_Init\n");
    ++failures;
  }
  {
    void* w = a;
    expect("redist_shared_allocate before MPI_Init", redist_shared_allocate(MPI_COMM_WORLD, 64, &w),
           "redist: redist_shared_allocate before MPI_Init: shared windows are made and freed through MPI");
    if (w != NULL) {
      printf("a window was made before MPI_Init\n");
      ++failures;
    }
    if (redist_shared_free(NULL) != REDIST_SUCCESS) {  /* NULL frees nothing, MPI or not */
      printf("redist_shared_free(NULL) before MPI_Init: %s\n", redist_last_error());
      ++failures;
    }
  }
  redist_layout_free(src);
  redist_layout_free(dst);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(spec_src, sizeof spec_src, "20x12 tile=3x4 block_cyclic grid=1x%d", size);
  snprintf(spec_dst, sizeof spec_dst, "20x12 tile=5x2 block_cyclic grid=%dx1", size);
  for (i = 0; i < 240; ++i) a[i] = i, b[i] = 0;
  if (redist_make_plan_spec(spec_src, spec_dst, NULL, MPI_COMM_WORLD, NULL, &plan) != REDIST_SUCCESS ||
      redist_execute_buffers(plan, a, b, NULL) != REDIST_SUCCESS) {  /* works while MPI runs */
    printf("rank %d: %s\n", rank, redist_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  expect("redist_execute_buffers after MPI_Finalize", redist_execute_buffers(plan, a, b, NULL), "after MPI_Finalize");
  expect("redist_plan_predictions after MPI_Finalize", redist_plan_predictions(plan, seconds, 64),
         "redist: redist_plan_predictions after MPI_Finalize");
  expect("redist_plan_predictions_storage after MPI_Finalize",
         redist_plan_predictions_storage(plan, "shared", seconds, 64),
         "redist: redist_plan_predictions_storage after MPI_Finalize");
  expect("redist_make_plan_spec after MPI_Finalize",
         redist_make_plan_spec(spec_src, spec_dst, NULL, MPI_COMM_SELF, NULL, &other),
         "redist: redist_make_plan_spec after MPI_Finalize");
  if (other != NULL) {
    printf("rank %d: a plan was made after MPI_Finalize\n", rank);
    ++failures;
  }
  redist_plan_free(plan); /* no fault after MPI_Finalize */
  printf("test_capi_outside_mpi: rank %d: %s\n", rank, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
