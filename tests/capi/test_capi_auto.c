/* auto through the C API (C99): options.auto_trials, redist_plan_auto_choice and
 * redist_plan_predictions. A 10x7 matrix of doubles on rank 0 is dealt out in
 * blocks of 3 rows over the ranks (the example of docs/c_api.md); every execute,
 * trials included, is checked element by element against the row formula. With
 * auto_trials = K the choice stays "" for the first 2K - 1 executes and is a
 * strategy name, the same on every rank, after the 2K-th; with 0 it is made on
 * the first execute. The predictions are one value per strategy, the same on
 * every rank, and leave the array past redist_strategy_count() alone; they are
 * the models for heap arrays (redist_plan_predictions_storage "heap"; auto with
 * no trials picks their smallest), "shared" differs for shm only. Bad
 * arguments give the same status and message on every rank. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <math.h>
#include <stdlib.h>

#include "capi_test.h"

static const int64_t m = 10, n = 7, mb = 3;
static int cases;

static redist_plan* plan_with(const char* strategy, int auto_trials, redist_status* st) {
  char dst_spec[128];
  snprintf(dst_spec, sizeof dst_spec, "%lldx%lld tile=%lldx%lld storage=local_array block_cyclic grid=%dx1",
           (long long)m, (long long)n, (long long)mb, (long long)n, test_ranks);
  redist_options o = {0};
  o.strategy = strategy;
  o.auto_trials = auto_trials;
  redist_plan* plan = NULL;
  *st = redist_make_plan_spec("10x7", dst_spec, NULL, MPI_COMM_WORLD, &o, &plan);
  return plan;
}

/* One execute with the plan's strategy, checked: 1 when every element is right. */
static int execute_checked(redist_plan* plan, const char* what) {
  int64_t rows = 0;
  for (int64_t i = 0; i < m; ++i) rows += (i / mb) % test_ranks == test_rank;
  const int64_t ld = rows > 0 ? rows : 1, src_n = test_rank == 0 ? m * n : 0;
  double* a = malloc(sizeof(double) * (size_t)(src_n + 1));
  double* b = malloc(sizeof(double) * (size_t)(ld * n + 1));
  for (int64_t k = 0; k < src_n; ++k) a[k] = (double)(k % m) + 1000.0 * (double)(k / m);
  for (int64_t k = 0; k < ld * n; ++k) b[k] = -1.0;
  const redist_status st = redist_execute_buffers(plan, a, b, NULL);
  CHECK(st == REDIST_SUCCESS, "%s: execute: %s", what, redist_last_error());
  int64_t wrong = 0;
  for (int64_t j = 0; st == REDIST_SUCCESS && j < n; ++j)
    for (int64_t r = 0; r < rows; ++r)
      wrong += b[r + j * ld] != (double)((r / mb) * mb * test_ranks + test_rank * mb + r % mb) + 1000.0 * (double)j;
  CHECK(wrong == 0, "%s: %lld elements wrong", what, (long long)wrong);
  free(a);
  free(b);
  return st == REDIST_SUCCESS && wrong == 0;
}

static int strategy_index(const char* name) {
  for (int i = 0; i < redist_strategy_count(); ++i)
    if (strcmp(redist_strategy_name(i), name) == 0) return i;
  return -1;
}

/* Collective: 1 when `s` is the same text on every rank. */
static int same_text(const char* s) {
  uint64_t h = text_hash(s), lo, hi;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* The plan's predictions: one per strategy, >= 0, some finite, the same on every
   rank; the two values past the strategies untouched. */
static void check_predictions(redist_plan* plan, double* t) {
  const int ns = redist_strategy_count();
  t[ns] = t[ns + 1] = -7.0;
  const redist_status st = redist_plan_predictions(plan, t, ns + 2);
  CHECK(st == REDIST_SUCCESS, "predictions: %s", redist_last_error());
  int finite = 0;
  for (int i = 0; i < ns; ++i) {
    CHECK(t[i] >= 0, "prediction of %s is %g", redist_strategy_name(i), t[i]);
    finite += isfinite(t[i]) != 0;
  }
  CHECK(finite > 0, "no strategy has a finite prediction");
  CHECK(t[ns] == -7.0 && t[ns + 1] == -7.0, "predictions wrote past redist_strategy_count()");
  double* lo = malloc(sizeof(double) * (size_t)ns);
  double* hi = malloc(sizeof(double) * (size_t)ns);
  MPI_Allreduce(t, lo, ns, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(t, hi, ns, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < ns; ++i)
    CHECK(lo[i] == hi[i], "prediction of %s differs between ranks: %g .. %g", redist_strategy_name(i), lo[i], hi[i]);
  free(lo);
  free(hi);
  ++cases;
}

/* auto with `trials` trials: "" until the 2*trials-th execute (the first when 0),
   then a strategy with a finite prediction, the same on every rank. */
static void auto_case(int trials, double* t) {
  redist_status st;
  redist_plan* plan = plan_with("auto", trials, &st);
  CHECK(st == REDIST_SUCCESS && plan, "auto_trials=%d: make_plan: %s", trials, redist_last_error());
  if (!plan) return;
  check_predictions(plan, t);
  CHECK(strcmp(redist_plan_auto_choice(plan), "") == 0, "auto_trials=%d: a choice before any execute: '%s'", trials,
        redist_plan_auto_choice(plan));
  const int decide = trials > 0 ? 2 * trials : 1;
  for (int e = 1; e <= decide + 1; ++e) {
    char what[64];
    snprintf(what, sizeof what, "auto_trials=%d, execute %d", trials, e);
    execute_checked(plan, what);
    const char* choice = redist_plan_auto_choice(plan);
    if (e < decide) {
      CHECK(strcmp(choice, "") == 0, "%s: decided '%s' before the trials ended", what, choice);
    } else {
      const int i = strategy_index(choice);
      CHECK(i >= 0, "%s: the choice '%s' is no strategy name", what, choice);
      CHECK(i < 0 || isfinite(t[i]), "%s: the choice '%s' predicts %g", what, choice, i >= 0 ? t[i] : 0.0);
      CHECK(same_text(choice), "%s: the choice '%s' differs between ranks", what, choice);
      if (trials == 0 && i >= 0) { /* the model alone: the smallest of the heap predictions (C arrays) */
        int low = 0;
        for (int k = 1; k < redist_strategy_count(); ++k)
          if (t[k] < t[low]) low = k;
        CHECK(i == low, "%s: auto chose '%s', the smallest heap prediction is '%s'", what, choice,
              redist_strategy_name(low));
      }
    }
  }
  redist_plan_free(plan);
  ++cases;
}

/* A collective error: `st` is `want` on every rank, the message contains `words`. */
static void expect_agreed(const char* kind, redist_status st, redist_status want, const char* words) {
  ++cases;
  check_agreed(kind, st, want, words);
}

static void bad_arguments(double* t) {
  const int last = test_ranks - 1, ns = redist_strategy_count();
  redist_status st;
  redist_plan* plan = plan_with("auto", -1, &st);
  expect_agreed("options.auto_trials < 0", st, REDIST_ERR_INVALID_ARGUMENT, "auto_trials must be >= 0");
  CHECK(plan == NULL, "a failed make_plan returned a plan");
  plan = plan_with("auto", 1, &st);
  CHECK(st == REDIST_SUCCESS, "make_plan: %s", redist_last_error());
  expect_agreed("predictions into NULL on the last rank",
                redist_plan_predictions(plan, test_rank == last ? NULL : t, ns), REDIST_ERR_INVALID_ARGUMENT,
                "seconds is NULL");
  char words[64];
  snprintf(words, sizeof words, "rank %d:", last);
  CHECK(strstr(redist_last_error(), words) != NULL, "message '%s' does not name %s", redist_last_error(), words);
  snprintf(words, sizeof words, "seconds holds %d values; redist_strategy_count() is %d", ns - 1, ns);
  expect_agreed("predictions into a short array", redist_plan_predictions(plan, t, ns - 1),
                REDIST_ERR_INVALID_ARGUMENT, words);
  redist_plan_free(plan);
  plan = plan_with("p2p", 0, &st); /* no machine model */
  CHECK(st == REDIST_SUCCESS, "make_plan: %s", redist_last_error());
  expect_agreed("predictions without a machine model", redist_plan_predictions(plan, t, ns),
                REDIST_ERR_INVALID_ARGUMENT, "no machine model");
  CHECK(strcmp(redist_plan_auto_choice(plan), "") == 0, "a p2p plan has an auto choice");
  redist_plan_free(plan);
  CHECK(redist_plan_auto_choice(NULL) == NULL, "auto_choice(NULL) is not NULL");
  ++cases;
}

/* redist_plan_predictions is the "heap" storage's; "shared" differs for shm
   alone (its window model) once there are peers: on the heap through rings
   (packed and unpacked) no less, through cross-memory attach (REDIST_SHM_FIFO=0,
   read by the model) another figure; another storage is refused on every rank,
   and so are storages that differ between ranks. */
static void storage_case(double* t) {
  const int ns = redist_strategy_count(), shm = strategy_index("shm");
  redist_status st;
  redist_plan* plan = plan_with("auto", 0, &st);
  CHECK(st == REDIST_SUCCESS && plan, "make_plan: %s", redist_last_error());
  if (!plan) return;
  double* heap = malloc(sizeof(double) * (size_t)ns);
  double* shared = malloc(sizeof(double) * (size_t)ns);
  CHECK(redist_plan_predictions(plan, t, ns) == REDIST_SUCCESS, "predictions: %s", redist_last_error());
  CHECK(redist_plan_predictions_storage(plan, "heap", heap, ns) == REDIST_SUCCESS, "heap: %s", redist_last_error());
  CHECK(redist_plan_predictions_storage(plan, "shared", shared, ns) == REDIST_SUCCESS, "shared: %s",
        redist_last_error());
  CHECK(shm >= 0, "no strategy shm");
  for (int i = 0; i < ns; ++i) {
    CHECK(t[i] == heap[i], "%s: predictions %g, heap %g", redist_strategy_name(i), t[i], heap[i]);
    if (i != shm)
      CHECK(heap[i] == shared[i], "%s: heap %g, shared %g", redist_strategy_name(i), heap[i], shared[i]);
  }
  if (test_ranks > 1 && shm >= 0) {
    CHECK(heap[shm] >= shared[shm], "shm: heap (rings) %g below shared %g", heap[shm], shared[shm]);
    setenv("REDIST_SHM_FIFO", "0", 1);
    CHECK(redist_plan_predictions_storage(plan, "heap", heap, ns) == REDIST_SUCCESS, "heap: %s", redist_last_error());
    unsetenv("REDIST_SHM_FIFO");
    CHECK(heap[shm] != shared[shm], "shm: heap (cma) and shared both %g", heap[shm]);
  }
  expect_agreed("predictions for storage 'disk' on the last rank",
                redist_plan_predictions_storage(plan, test_rank == test_ranks - 1 ? "disk" : "heap", t, ns),
                REDIST_ERR_INVALID_ARGUMENT, "storage 'disk': expected heap or shared");
  if (test_ranks > 1) /* two models in one max over ranks, before: success everywhere */
    expect_agreed("predictions for storage 'shared' on the last rank, 'heap' on the others",
                  redist_plan_predictions_storage(plan, test_rank == test_ranks - 1 ? "shared" : "heap", t, ns),
                  REDIST_ERR_MISMATCH, "predictions: storage differs between ranks");
  free(heap);
  free(shared);
  redist_plan_free(plan);
  ++cases;
}

int main(int argc, char** argv) {
  test_init(&argc, &argv);
  double* t = malloc(sizeof(double) * (size_t)(redist_strategy_count() + 2));
  auto_case(0, t);
  auto_case(1, t);
  auto_case(3, t);
  bad_arguments(t);
  storage_case(t);
  free(t);
  return test_finish("test_capi_auto", cases);
}
