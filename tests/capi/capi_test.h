/* Helpers of the C API's tests (C99): checks that count failures, and the check
 * that a status and message are the same on every rank. */
#ifndef REDIST_CAPI_TEST_H
#define REDIST_CAPI_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redist/redist.h"

static int test_rank, test_ranks, test_failures;

/* CHECK(condition, printf format, arguments...): prints and counts a failure. */
#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", test_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                          \
      fputc('\n', stderr);                                                                   \
      ++test_failures;                                                                       \
    }                                                                                        \
  } while (0)

static inline void test_init(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &test_ranks);
}

/* FNV-1a of the message, for comparing it between ranks. */
static inline uint64_t text_hash(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Collective: 1 when every rank has the same status and last error message. */
static inline int same_everywhere(redist_status status) {
  uint64_t v[2] = {(uint64_t)status, text_hash(redist_last_error())}, lo[2], hi[2];
  MPI_Allreduce(v, lo, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo[0] == hi[0] && lo[1] == hi[1];
}

/* Collective: a collective error, `st` is `want` on every rank with one message
   containing `words` ($REDIST_SHOW_ERRORS: rank 0 prints it). */
static inline void check_agreed(const char* kind, redist_status st, redist_status want, const char* words) {
  CHECK(st == want, "%s: got %s (%s), expected %s", kind, redist_status_name(st), redist_last_error(),
        redist_status_name(want));
  CHECK(strstr(redist_last_error(), words) != NULL, "%s: message '%s' lacks '%s'", kind, redist_last_error(), words);
  CHECK(same_everywhere(st), "%s: status or message differs between ranks: %s", kind, redist_last_error());
  if (getenv("REDIST_SHOW_ERRORS") && test_rank == 0) printf("%s: %s: %s\n", kind, redist_status_name(st),
                                                              redist_last_error());
}

/* Collective: prints the verdict of a test program on rank 0 and finalizes;
   returns its exit code (failures on any rank fail every rank). */
static inline int test_finish(const char* program, int cases) {
  int total = 0;
  MPI_Allreduce(&test_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (test_rank == 0)
    printf("%s: %d cases on %d ranks, %d failed checks: %s\n", program, cases, test_ranks, total,
           total ? "FAILED" : "passed");
  MPI_Finalize();
  return total ? 1 : 0;
}

#endif
