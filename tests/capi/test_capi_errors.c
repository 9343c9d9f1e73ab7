/* Bad input through the C API (C99): each collective error comes back with the
 * same status and the same message on every rank, nothing hangs, and a failed
 * execute leaves the target untouched; NULL arguments are refused locally. Each
 * kind checks the status, the message's key words and that the output handle
 * stays NULL. */
#include <stdlib.h>

#include "capi_test.h"

static int kinds;

static const char* kGood = "13x11 tile=3x4 block_cyclic grid=1x1";

/* A collective error: `st` is `want` on every rank, with one message containing `words`. */
static void expect_agreed(const char* kind, redist_status st, redist_status want, const char* words) {
  ++kinds;
  check_agreed(kind, st, want, words);
}

/* A local error: `st` is REDIST_ERR_INVALID_ARGUMENT with a message naming `words`. */
static void expect_null(const char* kind, redist_status st, const char* words) {
  ++kinds;
  CHECK(st == REDIST_ERR_INVALID_ARGUMENT, "%s: got %s", kind, redist_status_name(st));
  CHECK(strstr(redist_last_error(), words) != NULL, "%s: message '%s' lacks '%s'", kind, redist_last_error(), words);
}

static redist_plan* plan_spec(const char* src, const char* dst, const char* region, const redist_options* o,
                              redist_status* st) {
  redist_plan* plan = (redist_plan*)&kinds; /* not NULL: a failure must reset it */
  *st = redist_make_plan_spec(src, dst, region, MPI_COMM_WORLD, o, &plan);
  if (*st != REDIST_SUCCESS) CHECK(plan == NULL, "a failed make_plan left *plan set");
  return plan;
}

static void bad_specs(void) {
  const int last = test_ranks - 1;
  redist_layout* l = (redist_layout*)&kinds;
  expect_agreed("a spec that does not parse (every rank)", redist_layout_create("8000x8000 grid=ax2", &l),
                REDIST_ERR_INVALID_SPEC, "expected an integer after 'grid='");
  CHECK(l == NULL, "a failed redist_layout_create left *layout set");
  redist_status st;
  plan_spec(kGood, test_rank == last ? "13x11 tile=3x" : kGood, NULL, NULL, &st);
  expect_agreed("a spec that does not parse on the last rank only", st, REDIST_ERR_INVALID_SPEC, "target layout");
  char rank_words[32];
  snprintf(rank_words, sizeof rank_words, "rank %d:", last);
  CHECK(strstr(redist_last_error(), rank_words) != NULL, "message '%s' does not name %s", redist_last_error(),
        rank_words);
  plan_spec(kGood, kGood, test_rank == last ? "4x4 from=1xa" : "4x4 from=1x1", NULL, &st);
  expect_agreed("a region that does not parse on the last rank only", st, REDIST_ERR_INVALID_SPEC, "bad region");
  plan_spec("8x8 tile=2x2 block_cyclic grid=64x64", kGood, NULL, NULL, &st);
  expect_agreed("a grid larger than the communicator", st, REDIST_ERR_INVALID_ARGUMENT, "needs 4096 ranks");
  plan_spec(kGood, kGood, "5x5 from=10x0", NULL, &st);
  expect_agreed("a region that leaves the source array", st, REDIST_ERR_INVALID_ARGUMENT, "leaves the source array");
  plan_spec(kGood, "13x11x2", NULL, NULL, &st);
  expect_agreed("layouts of different dimensions", st, REDIST_ERR_INVALID_ARGUMENT, "dimension mismatch");
  redist_options o = {0};
  o.strategy = "nope";
  plan_spec(kGood, kGood, NULL, &o, &st);
  expect_agreed("an unknown strategy in the options", st, REDIST_ERR_INVALID_ARGUMENT, "options.strategy");
  /* The status follows what went wrong, not the words: the message quotes the name. */
  o.strategy = "fast between ranks";
  plan_spec(kGood, kGood, NULL, &o, &st);
  expect_agreed("an unknown strategy whose name says 'between ranks'", st, REDIST_ERR_INVALID_ARGUMENT,
                "unknown strategy 'fast between ranks'");
  o.strategy = NULL;
  o.elem_size = -4;
  plan_spec(kGood, kGood, NULL, &o, &st);
  expect_agreed("a negative options.elem_size", st, REDIST_ERR_INVALID_ARGUMENT, "options.elem_size");
  o.elem_size = 0;
  o.copy_threads = test_rank == test_ranks - 1 ? 5000 : 1; /* not agreed, but checked on every rank */
  plan_spec(kGood, kGood, NULL, &o, &st);
  expect_agreed("options.copy_threads above 1024 on one rank", st, REDIST_ERR_INVALID_ARGUMENT,
                "options.copy_threads must be from 0 to 1024");
  o.copy_threads = 0;
  if (test_ranks > 1) {
    plan_spec(kGood, test_rank == 1 ? "13x11 tile=4x4 block_cyclic grid=1x1" : kGood, NULL, NULL, &st);
    expect_agreed("the target layout differs between ranks", st, REDIST_ERR_MISMATCH, "between ranks");
    /* options.elem_size on one rank: named as the option (it was "source layout differs") */
    o.elem_size = test_rank == 1 ? 4 : 0;
    plan_spec(kGood, kGood, NULL, &o, &st);
    expect_agreed("options.elem_size on one rank", st, REDIST_ERR_MISMATCH,
                  "options.elem_size differs between ranks: rank 0 has '0', rank 1 has '4'");
    o.elem_size = 0;
  }
}

static void null_layouts(void) {
  redist_layout* good = NULL;
  CHECK(redist_layout_create(kGood, &good) == REDIST_SUCCESS, "%s", redist_last_error());
  CHECK(strcmp(redist_last_error(), "") == 0, "the message after a success is '%s'", redist_last_error());
  CHECK(strcmp(redist_layout_spec(good), kGood) == 0, "canonical spec '%s'", redist_layout_spec(good));
  redist_plan* plan = NULL;
  redist_status st = redist_make_plan(test_rank == 0 ? NULL : good, good, NULL, MPI_COMM_WORLD, NULL, &plan);
  expect_agreed("a NULL source layout on rank 0 only", st, REDIST_ERR_INVALID_ARGUMENT, "source layout is NULL");
  CHECK(plan == NULL, "plan set after a failure");
  st = redist_make_plan(good, good, NULL, MPI_COMM_WORLD, NULL, test_rank == 0 ? NULL : &plan);
  expect_agreed("a NULL plan address on rank 0 only", st, REDIST_ERR_INVALID_ARGUMENT, "plan is NULL");
  CHECK(plan == NULL, "plan set after a failure");
  st = redist_make_plan(good, good, NULL, MPI_COMM_NULL, NULL, &plan);
  expect_null("MPI_COMM_NULL", st, "MPI_COMM_NULL");
  if (test_ranks >= 2) { /* an intercommunicator: redist's message, the same on every rank (MPI_ERR_BUFFER before) */
    const int half = test_ranks / 2, side = test_rank < half ? 0 : 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, side, test_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side == 0 ? half : 0, 9, &inter);
    st = redist_make_plan(good, good, NULL, inter, NULL, &plan);
    expect_agreed("an intercommunicator", st, REDIST_ERR_INVALID_ARGUMENT, "comm is an intercommunicator");
    CHECK(plan == NULL, "plan set after a failure");
    void* p = &kinds;
    st = redist_shared_allocate(inter, 64, &p);
    expect_agreed("an intercommunicator to shared_allocate", st, REDIST_ERR_INVALID_ARGUMENT, "make_group_plan");
    CHECK(p == NULL, "*ptr set after a failure");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
  }
  redist_layout* none = (redist_layout*)&kinds;
  expect_null("NULL spec", redist_layout_create(NULL, &none), "spec is NULL");
  CHECK(none == NULL, "a failed redist_layout_create left *layout set");
  expect_null("NULL layout address", redist_layout_create(kGood, NULL), "layout is NULL");
  expect_null("NULL layout to local_size", redist_layout_local_size(NULL, 0, NULL, NULL), "layout is NULL");
  expect_null("NULL layout to check", redist_layout_check(NULL, 1), "layout is NULL");
  expect_null("a negative rank to local_size", redist_layout_local_size(good, -1, NULL, NULL), "rank must be >= 0");
  /* Not an error (redist.h): a layout knows no communicator, and a rank its
     ownership does not use stores nothing (rank 1 and up of the docs' example,
     whose source "10x7" is rank 0's; redist_layout_check compares with a size). */
  int64_t nb = -1, ne = -1;
  CHECK(redist_layout_local_size(good, 99, &nb, &ne) == REDIST_SUCCESS && ne == 0, "rank 99: %s, %lld elements",
        redist_last_error(), (long long)ne);
  int64_t e = 0;
  expect_null("a block beyond the rank's", redist_layout_block_elements(good, 0, 1, &e), "outside [0, 1)");
  redist_layout* wide = NULL;
  CHECK(redist_layout_create("8x8 tile=2x2 block_cyclic grid=64x64", &wide) == REDIST_SUCCESS, "parses");
  expect_null("redist_layout_check of a grid too large", redist_layout_check(wide, test_ranks), "4096 ranks");
  CHECK(redist_layout_check(good, test_ranks) == REDIST_SUCCESS, "%s", redist_last_error());
  expect_null("redist_layout_check of 0 ranks", redist_layout_check(good, 0), "a communicator has at least 1 rank");
  redist_layout_free(wide);
  redist_layout_free(good);
  redist_layout_free(NULL);
  expect_null("NULL plan to execute", redist_execute(NULL, NULL, 0, NULL, 0, NULL), "plan is NULL");
  expect_null("NULL plan to execute_buffers", redist_execute_buffers(NULL, NULL, NULL, NULL), "plan is NULL");
  redist_plan_stats stats;
  expect_null("NULL plan to get_stats", redist_plan_get_stats(NULL, &stats), "plan is NULL");
  redist_plan_free(NULL);
}

/* Errors at execute: agreed, and the target keeps its bytes. */
static void bad_execute(void) {
  redist_status st;
  redist_plan* plan = plan_spec("13x11 tile=3x4", "13x11 tile=5x2", NULL, NULL, &st);
  CHECK(st == REDIST_SUCCESS, "%s", redist_last_error());
  if (!plan) return;
  int64_t elems = test_rank == 0 ? 13 * 11 : 0;
  double* src = calloc((size_t)elems + 1, sizeof(double));
  double* dst = malloc(sizeof(double) * (size_t)(elems + 1));
  memset(dst, 0x5A, sizeof(double) * (size_t)(elems + 1));
  const void* two[2] = {src, src};
  void* d1[1] = {dst};
  expect_null("NULL stats", redist_plan_get_stats(plan, NULL), "stats is NULL");
  st = redist_execute(plan, two, test_rank == 0 ? 2 : 1, d1, 1, NULL);
  expect_agreed("two source pointers on rank 0", st, REDIST_ERR_INVALID_ARGUMENT, "expected one buffer, got 2");
  st = redist_execute(plan, NULL, 0, d1, 1, NULL);
  expect_agreed("no source pointers", st, REDIST_ERR_INVALID_ARGUMENT, "expected one buffer, got 0");
  st = redist_execute(plan, test_rank == test_ranks - 1 ? NULL : (const void* const*)two, 1, d1, 1, NULL);
  expect_agreed("a NULL source array with a count of 1 on the last rank", st, REDIST_ERR_INVALID_ARGUMENT,
                "src_blocks is NULL but src_count is 1");
  st = redist_execute(plan, two, test_rank == test_ranks - 1 ? -1 : 1, d1, 1, NULL);
  expect_agreed("a negative count on the last rank", st, REDIST_ERR_INVALID_ARGUMENT, "src_count -1 is negative");
  st = redist_execute_buffers(plan, src, test_rank == 0 ? NULL : dst, NULL);
  expect_agreed("a NULL target buffer where rank 0 stores data", st, REDIST_ERR_INVALID_ARGUMENT, "is null");
  st = redist_execute_buffers(plan, src, (void*)src, NULL);
  expect_agreed("source and target overlap", st, REDIST_ERR_INVALID_ARGUMENT, "overlap");
  st = redist_execute_buffers(plan, src, dst, "nope");
  expect_agreed("an unknown strategy at execute", st, REDIST_ERR_INVALID_ARGUMENT, "nope");
  st = redist_execute_buffers(plan, src, dst, "x with different strategies");
  expect_agreed("an unknown strategy at execute whose name says 'with different strategies'", st,
                REDIST_ERR_INVALID_ARGUMENT, "x with different strategies");
  if (test_ranks > 1) {
    st = redist_execute_buffers(plan, src, dst, test_rank == 1 ? redist_strategy_name(1) : redist_strategy_name(0));
    expect_agreed("different strategies on different ranks", st, REDIST_ERR_MISMATCH, "different strategies");
  }
  unsigned char want[8];
  memset(want, 0x5A, 8);
  int64_t touched = 0;
  for (int64_t k = 0; k < elems; ++k) touched += memcmp(dst + k, want, 8) != 0;
  CHECK(touched == 0, "%lld target elements changed by failed executes", (long long)touched);
  CHECK(redist_execute_buffers(plan, src, dst, NULL) == REDIST_SUCCESS, "after the errors: %s", redist_last_error());
  /* NULL and "" both name the plan's options.strategy (redist.h, as an empty
     name does in C++'s Plan::execute); not the CLI's unknown strategy ''. */
  CHECK(redist_execute_buffers(plan, src, dst, "") == REDIST_SUCCESS, "strategy \"\": %s", redist_last_error());
  redist_plan_free(plan);
  free(src), free(dst);
  /* Target tile pointers that share memory on rank 0 (tiles 0 and 1 at one
     address, then tile 1 overlapping tile 0 by one element): refused on every
     rank, the target untouched (this was REDIST_SUCCESS with tile 0's data lost). */
  plan = plan_spec("4x4", "4x4 tile=2x2 storage=tile_pointers", NULL, NULL, &st);
  CHECK(st == REDIST_SUCCESS, "%s", redist_last_error());
  if (!plan) return;
  double a[16], t[16];
  for (int k = 0; k < 16; ++k) a[k] = k, t[k] = -1;
  for (int shift = 0; shift < 4; shift += 3) {
    const void* s1[1] = {test_rank == 0 ? (const void*)a : NULL};
    void* tiles[4] = {t, t + shift, t + 8, t + 12};
    st = redist_execute(plan, s1, 1, test_rank == 0 ? tiles : NULL, test_rank == 0 ? 4 : 0, NULL);
    expect_agreed("target tile pointers that overlap on rank 0", st, REDIST_ERR_INVALID_ARGUMENT,
                  "tile buffers overlap");
    for (int k = 0; k < 16; ++k) CHECK(t[k] == -1, "target element %d changed by a refused execute", k);
  }
  redist_plan_free(plan);
}

/* An MPI error inside an execute is REDIST_ERR_MPI on the rank that saw it only,
   and that plan refuses to run again. A truncated message is made as a peer running
   another plan would make it (tests/mpi/test_faults.cpp): rank 0 sends a message
   larger than the plan's on the plan's communicator, with the tag of p2p's data
   (7, private to src/exec/strategies/p2p.cpp), before executing. */
static void mpi_error(void) {
  if (test_ranks < 2) return; /* needs a sender and a receiver */
  redist_status st;
  redist_plan* plan = plan_spec("16x16 tile=16x16 table owners=0", "16x16 tile=16x16 table owners=1", NULL, NULL, &st);
  CHECK(st == REDIST_SUCCESS, "%s", redist_last_error());
  if (!plan) return;
  ++kinds;
  double* a = calloc(256, sizeof(double));
  double* b = calloc(256, sizeof(double));
  char rogue[3000] = {0};
  MPI_Request req = MPI_REQUEST_NULL;
  if (test_rank == 0) MPI_Isend(rogue, 3000, MPI_BYTE, 1, 7, redist_plan_comm(plan), &req);
  st = redist_execute_buffers(plan, test_rank == 0 ? a : NULL, test_rank == 1 ? b : NULL, "p2p");
  if (test_rank == 1) {
    CHECK(st == REDIST_ERR_MPI, "truncated message: got %s: %s", redist_status_name(st), redist_last_error());
    CHECK(strstr(redist_last_error(), "MPI_ERR_TRUNCATE") && strstr(redist_last_error(), "redist: rank 1:"),
          "message: %s", redist_last_error());
    /* the plan's own message is still waiting: take it, so the communicator is clean */
    MPI_Recv(b, 256, MPI_DOUBLE, 0, 7, redist_plan_comm(plan), MPI_STATUS_IGNORE);
    st = redist_execute_buffers(plan, NULL, b, "p2p"); /* local refusal, no communication */
    CHECK(st == REDIST_ERR_MPI && strstr(redist_last_error(), "cannot run again"), "again: %s: %s",
          redist_status_name(st), redist_last_error());
  } else {
    CHECK(st == REDIST_SUCCESS, "the error is local to rank 1, rank %d got: %s", test_rank, redist_last_error());
  }
  if (test_rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  redist_plan_free(plan);
  free(a), free(b);
}

static void names(void) {
  CHECK(strcmp(redist_status_name(REDIST_ERR_MISMATCH), "REDIST_ERR_MISMATCH") == 0, "status name");
  CHECK(strcmp(redist_status_name((redist_status)99), "unknown") == 0, "status name of 99");
  CHECK(redist_strategy_name(-1) == NULL && redist_strategy_name(redist_strategy_count()) == NULL, "out of range");
  CHECK(redist_strategy_name(0) != NULL && strcmp(redist_strategy_name(0), "p2p") == 0, "strategy 0");
}

int main(int argc, char** argv) {
  test_init(&argc, &argv);
  bad_specs();
  null_layouts();
  bad_execute();
  mpi_error();
  names();
  return test_finish("test_capi_errors", kinds);
}
