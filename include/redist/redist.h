/* The C API of redist (C99; docs/c_api.md). A front end over the C++ core
 * (redist.hpp) that holds no logic of its own: layouts are made from the same
 * spec strings (docs/spec.md), plans by the same make_plan, with the same
 * collective validation. No C++ type and no exception crosses this header:
 * every call that can fail returns a redist_status, and redist_last_error()
 * gives the message.
 *
 *   redist_layout *src, *dst;
 *   redist_plan* plan;
 *   redist_layout_create("8000x8000 tile=400x400 block_cyclic grid=1x2", &src);
 *   redist_layout_create("8000x8000 tile=300x300 block_cyclic grid=2x1", &dst);
 *   redist_make_plan(src, dst, "7000x7000 from=500x300 to=1000x0", MPI_COMM_WORLD, NULL, &plan);
 *   redist_execute_buffers(plan, my_src, my_dst, NULL);  (as often as needed)
 *   redist_plan_free(plan);
 *   redist_layout_free(src);
 *   redist_layout_free(dst);
 *
 * Collective errors: a call marked "collective" agrees on its outcome across the
 * communicator before anything moves, as the C++ API does. When any rank finds
 * bad input, every rank returns the same status and redist_last_error() gives
 * the same message everywhere ("redist: rank R: ..." naming the lowest rank that
 * found it); nothing hangs and the target is left untouched. REDIST_ERR_MPI is
 * the exception: it is local to the rank that saw the failure (the C++
 * redist::MpiError); end the job with MPI_Abort.
 *
 * Sizes and counts are int64_t. A plan is executed by one thread at a time (a
 * second thread at once is refused, as in C++); layout handles may be queried
 * from several threads. Plans must be freed before MPI_Finalize (freed after it,
 * the communicator is left to MPI). Calls that communicate (making a plan,
 * executing it, predictions) return REDIST_ERR_INVALID_ARGUMENT before MPI_Init
 * and after MPI_Finalize, saying so; layouts need no MPI. */
#ifndef REDIST_REDIST_H
#define REDIST_REDIST_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */
typedef enum redist_status {
  REDIST_SUCCESS = 0,
  /* A NULL pointer, a value out of range, a layout that does not fit the
     communicator, the wrong count of buffers (C++ redist::Error). Their sizes
     are the caller's: the API takes pointers only (redist_layout_local_size). */
  REDIST_ERR_INVALID_ARGUMENT = 1,
  /* A layout spec or region string that does not parse (docs/spec.md). */
  REDIST_ERR_INVALID_SPEC = 2,
  /* Ranks passed different layouts, regions, options or strategies. */
  REDIST_ERR_MISMATCH = 3,
  /* An MPI call failed on this rank (C++ redist::MpiError): local, not agreed. */
  REDIST_ERR_MPI = 4,
  REDIST_ERR_OUT_OF_MEMORY = 5,
  /* Anything else the core threw: a bug in redist; please report the message. */
  REDIST_ERR_INTERNAL = 6
} redist_status;

/* The enumerator's name ("REDIST_ERR_MPI"); "unknown" for other values. */
const char* redist_status_name(redist_status status);
/* The message of the last call on this thread that returned a status other than
   REDIST_SUCCESS; "" after a call that succeeded. Valid until the next call of
   this API on the same thread. Never NULL. */
const char* redist_last_error(void);

/* -------------------------------------------------------------- strategies */
/* The strategies of the registry (p2p, segment, ...), in its order, without
   "auto": redist_strategy_name(i) for 0 <= i < redist_strategy_count(), else NULL. */
int redist_strategy_count(void);
const char* redist_strategy_name(int index);

/* ----------------------------------------------------------------- layouts */
typedef struct redist_layout redist_layout;

/* Local (no MPI). Parses a spec string ("8000x8000 tile=400x400 block_cyclic
   grid=2x2", docs/spec.md) into *layout. Syntax only, like Layout::parse: values
   (a grid larger than the communicator) are checked by redist_make_plan.
   REDIST_ERR_INVALID_SPEC with the parser's message (column, what was expected)
   on a syntax error, *layout then NULL. Parsing is deterministic, so ranks given
   the same bad spec all get the same status and message. */
redist_status redist_layout_create(const char* spec, redist_layout** layout);
/* Frees a layout (NULL: nothing). Plans made from it keep their own copy. */
void redist_layout_free(redist_layout* layout);
/* The canonical spec string (Layout::spec()), owned by the layout; NULL for NULL. */
const char* redist_layout_spec(const redist_layout* layout);
/* Local: REDIST_ERR_INVALID_ARGUMENT with a message naming the bad values when the
   layout is not valid on a communicator of comm_size ranks (Layout::check). */
redist_status redist_layout_check(const redist_layout* layout, int comm_size);
/* Local: what `rank` stores (LocalIndex): *blocks, the pointers execute takes for
   this layout (1, or one per local tile for storage=tile_pointers), and *elements,
   the elements of all its storage (the size of the one buffer of storage=tile or
   local_array). Either output may be NULL. O(tiles of the layout) for ownerships
   that are not block_cyclic. A layout knows no communicator: a rank beyond those
   its ownership names stores nothing (0 elements; check the layout against the
   communicator with redist_layout_check). */
redist_status redist_layout_local_size(const redist_layout* layout, int rank, int64_t* blocks,
                                       int64_t* elements);
/* Local: elements of block `block` (0 <= block < blocks) of `rank`. */
redist_status redist_layout_block_elements(const redist_layout* layout, int rank, int64_t block,
                                           int64_t* elements);

/* ---------------------------------------------------------- shared storage */
/* Collective over `comm`: *ptr gets `bytes` (>= 0, may differ per rank) of
   zeroed, page-aligned memory in one MPI-3 shared window per node of `comm`
   (redist::shared_allocate, docs/shm.md; the node size $REDIST_NODE_SIZE where
   set). Arrays there are what the `shm` strategy copies fastest: each element
   once, straight between the ranks' windows, where arrays the caller allocated
   go through rings in shared memory (two copies) or cross-memory attach. A
   rank's local storage of a layout is redist_layout_local_size's elements times
   the element size. Bytes < 0 on any rank, ptr NULL on any rank, or MPI unable
   to make the window: the same status and message on every rank, *ptr NULL.
   comm == MPI_COMM_NULL is refused locally. */
redist_status redist_shared_allocate(MPI_Comm comm, int64_t bytes, void** ptr);
/* Collective over the ranks that allocated `ptr` together (the window's node):
   frees memory of redist_shared_allocate; NULL on every rank frees nothing.
   Before MPI_Finalize. REDIST_ERR_INVALID_ARGUMENT on a rank whose pointer did
   not come from redist_shared_allocate (nothing freed there; the other ranks of
   the window then wait in its collective free, as with mismatched MPI
   collectives). */
redist_status redist_shared_free(void* ptr);

/* ------------------------------------------------------------------- plans */
typedef struct redist_plan redist_plan;

/* Options of redist_make_plan. All zero (or a NULL pointer) gives the defaults:
   redist_options o = {0}; */
typedef struct redist_options {
  /* The strategy execute runs when it names none: a name of redist_strategy_name
     or "auto". NULL or "": "p2p". */
  const char* strategy;
  /* Messages larger than this are split. 0: 2^30. */
  int64_t max_message_bytes;
  /* Bytes per element for both layouts (the element type: 4 for float or int32_t,
     16 for double complex). 0: the layouts' own (esize= in the spec, default 8). */
  int64_t elem_size;
  /* A calibration file of `redist calibrate` for "auto" (Options::calibration).
     NULL or "": the default file, or a quick measurement, when the strategy is auto. */
  const char* calibration;
  /* auto measuring instead of trusting the model alone (Options::auto_trials,
     `redist run --auto-trials`): with k > 0 the first 2k executes under "auto"
     alternate between the two strategies the model predicts fastest, timing each,
     then auto keeps the one with the smaller median time (the slowest rank's).
     0: the model alone. Negative: REDIST_ERR_INVALID_ARGUMENT from make_plan.
     (Added after the first fields: a program compiled against an older header
     passes a shorter struct; rebuild it.) */
  int auto_trials;
  /* Threads per rank for this rank's copies (Options::copy_threads, docs/strategies.md
     "Copy threads per rank"): local pieces, packing, unpacking and shm's push cut
     into parts of at least 4 MB, one thread each. 0: $REDIST_COPY_THREADS, else 1.
     Outside 0..1024: REDIST_ERR_INVALID_ARGUMENT from make_plan. (Added after
     auto_trials, as it was.) */
  int copy_threads;
} redist_options;

/* Collective over `comm` (every rank calls it, with the same arguments). Plans
   `region` of `src` onto `dst`: region is "SIZE from=OFFSET to=OFFSET" as in the
   C++ Region::parse ("7000x7000 from=500x300 to=1000x0"); NULL or "": the whole
   source shape at offset 0. options may be NULL. On success *plan is a plan with
   its own duplicate of comm. Every argument error, also a NULL layout on one rank
   (its redist_layout_create failed) or a region that does not parse on one rank,
   is agreed: the same status and message on every rank, *plan NULL. comm ==
   MPI_COMM_NULL is refused locally (nothing to agree over). */
redist_status redist_make_plan(const redist_layout* src, const redist_layout* dst, const char* region,
                               MPI_Comm comm, const redist_options* options, redist_plan** plan);
/* Collective: the same from spec strings, parsed here; a spec that does not parse
   on any rank gives REDIST_ERR_INVALID_SPEC on every rank, with that rank's message. */
redist_status redist_make_plan_spec(const char* src_spec, const char* dst_spec, const char* region,
                                    MPI_Comm comm, const redist_options* options, redist_plan** plan);

/* Collective over the plan's communicator. One pointer per block on each side
   (redist_layout_local_size: one buffer, or one per local tile for
   storage=tile_pointers, in storage order); a pointer may be NULL where its block
   holds no elements, the arrays may be NULL when their count is 0. Source and
   target memory must not overlap. `strategy`: a strategy name or "auto"; NULL or
   "": the plan's options.strategy; every rank names the same one. A wrong count,
   a NULL buffer that should hold data, overlapping buffers or different
   strategies on different ranks: the same status and message on every rank,
   nothing moved. The plan may be executed again (allocates nothing after the
   first execute of a strategy). */
redist_status redist_execute(redist_plan* plan, const void* const* src_blocks, int64_t src_count,
                             void* const* dst_blocks, int64_t dst_count, const char* strategy);
/* Collective: the one-buffer form (storage=tile and local_array). */
redist_status redist_execute_buffers(redist_plan* plan, const void* src, void* dst, const char* strategy);
/* Frees a plan and its communicator (NULL: nothing). Call it on every rank,
   before MPI_Finalize. */
void redist_plan_free(redist_plan* plan);

/* The plan's own duplicate of the communicator given to make_plan (Plan::comm());
   MPI_COMM_NULL for NULL. Freed by redist_plan_free. */
MPI_Comm redist_plan_comm(const redist_plan* plan);

/* The strategy "auto" runs for this plan (Plan::auto_choice()), owned by the
   plan: "" until auto has decided (its first execute, or after the
   2 * options.auto_trials trial executes), then a name of redist_strategy_name,
   the same on every rank. NULL for NULL. Local; valid until the plan is freed. */
const char* redist_plan_auto_choice(const redist_plan* plan);

/* Collective over the plan's communicator: each strategy's predicted seconds
   for arrays the caller allocated (Plan::predictions_for("heap"), what auto
   compares for them; the cost model of docs/strategies.md; max over ranks, the
   same on every rank), seconds[i] for redist_strategy_name(i), i <
   redist_strategy_count(). INFINITY where the strategy cannot run this plan.
   `count` is the length of `seconds`, at least redist_strategy_count(); entries
   past it are left alone. Needs the plan's machine model (options.strategy
   "auto" or options.calibration). A NULL or short array on any rank, or a plan
   without a model: the same status and message on every rank. */
redist_status redist_plan_predictions(redist_plan* plan, double* seconds, int64_t count);
/* The same for arrays in `storage`: "heap" (memory the caller allocated, what
   redist_plan_predictions gives: a strategy whose model needs shared windows,
   shm, predicts its heap model, as auto does for such arrays) or "shared" (arrays
   in shared windows, Plan::predictions()). Another string or NULL on any rank:
   REDIST_ERR_INVALID_ARGUMENT on every rank; "heap" on some ranks and "shared"
   on others: REDIST_ERR_MISMATCH on every rank. */
redist_status redist_plan_predictions_storage(redist_plan* plan, const char* storage, double* seconds,
                                              int64_t count);

/* This rank's plan figures (C++ PlanStats), without data or MPI. */
typedef struct redist_plan_stats {
  int64_t bytes_sent, bytes_received, bytes_local;
  int64_t messages_sent, messages_received;
  int64_t segments_sent, segments_received, local_copies;
  int64_t runs_sent, runs_received, local_runs;
  int64_t plan_bytes;
  int64_t target_tiles, max_segments_per_tile, segments_per_tile_total;
} redist_plan_stats;
redist_status redist_plan_get_stats(const redist_plan* plan, redist_plan_stats* stats);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* REDIST_REDIST_H */
