/* The C API moves data right (C99, compiled by the C compiler): every strategy,
 * 2-D block-cyclic layouts with ragged edge tiles, source processes, both grid
 * orders, the three storages, a region at offsets, element sizes 8 and 4, on any
 * rank count. The oracle is written here, from the spec's parameters alone: each
 * source element holds a code of its global index; after execute every target
 * element must hold, bit for bit, the code of the source element the region maps
 * to it, and every other target byte its sentinel. */
#include <stdlib.h>

#include "capi_test.h"

/* One side of a case: a 2-D block_cyclic layout. */
typedef struct {
  int64_t m, n;        /* shape */
  int64_t mb, nb;      /* tile size (the last tile of a dimension is ragged) */
  int pr, pc;          /* process grid */
  int sr, sc;          /* grid coordinate owning tile 0 (src=) */
  int col_order;       /* order=col: rank = g0 + g1 * pr; else rank = g0 * pc + g1 */
  const char* storage; /* tile, local_array or tile_pointers */
} Side;

/* What this rank stores for a side, from the oracle: gidx[k] is the global index
   (i + j * m) of local element k, -1 for padding; blocks and their first element. */
typedef struct {
  int64_t elements, nblocks;
  int64_t* gidx;
  int64_t* block_start;
} LocalMap;

static void spec_of(const Side* s, char* out, size_t size) {
  snprintf(out, size, "%lldx%lld tile=%lldx%lld storage=%s block_cyclic grid=%dx%d src=%dx%d order=%s",
           (long long)s->m, (long long)s->n, (long long)s->mb, (long long)s->nb, s->storage, s->pr, s->pc, s->sr,
           s->sc, s->col_order ? "col" : "row");
}

static int owner(const Side* s, int64_t t0, int64_t t1) {
  const int g0 = (int)((t0 + s->sr) % s->pr), g1 = (int)((t1 + s->sc) % s->pc);
  return s->col_order ? g0 + g1 * s->pr : g0 * s->pc + g1;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* tile and tile_pointers: owned tiles in column-major tile order, each column-major. */
static LocalMap tiles_map(const Side* s, int me) {
  LocalMap lm = {0, 0, NULL, NULL};
  const int64_t nt0 = ceil_div(s->m, s->mb), nt1 = ceil_div(s->n, s->nb);
  lm.gidx = malloc(sizeof(int64_t) * (size_t)(s->m * s->n + 1));
  lm.block_start = malloc(sizeof(int64_t) * (size_t)(nt0 * nt1 + 1));
  for (int64_t t1 = 0; t1 < nt1; ++t1)
    for (int64_t t0 = 0; t0 < nt0; ++t0) {
      if (owner(s, t0, t1) != me) continue;
      lm.block_start[lm.nblocks++] = lm.elements;
      for (int64_t j = t1 * s->nb; j < min64((t1 + 1) * s->nb, s->n); ++j)
        for (int64_t i = t0 * s->mb; i < min64((t0 + 1) * s->mb, s->m); ++i) lm.gidx[lm.elements++] = i + j * s->m;
    }
  if (strcmp(s->storage, "tile") == 0) lm.nblocks = 1, lm.block_start[0] = 0;
  return lm;
}

/* local_array (ScaLAPACK): rows and columns of the rank's grid row and column, in
   global order, in one column-major array with ld = max(1, local rows). */
static LocalMap array_map(const Side* s, int me) {
  LocalMap lm = {0, 1, NULL, NULL};
  int64_t lrows = 0, lcols = 0;
  int64_t* row_of = malloc(sizeof(int64_t) * (size_t)(s->m + 1));
  int64_t* col_of = malloc(sizeof(int64_t) * (size_t)(s->n + 1));
  /* this rank's grid coordinate (none outside the grid) */
  const int in_grid = me < s->pr * s->pc;
  const int g0 = s->col_order ? me % s->pr : me / s->pc, g1 = s->col_order ? me / s->pr : me % s->pc;
  for (int64_t i = 0; i < s->m; ++i) row_of[i] = in_grid && (i / s->mb + s->sr) % s->pr == g0 ? lrows++ : -1;
  for (int64_t j = 0; j < s->n; ++j) col_of[j] = in_grid && (j / s->nb + s->sc) % s->pc == g1 ? lcols++ : -1;
  const int64_t ld = lrows > 1 ? lrows : 1;
  lm.elements = ld * lcols;
  lm.gidx = malloc(sizeof(int64_t) * (size_t)(lm.elements + 1));
  lm.block_start = malloc(sizeof(int64_t));
  lm.block_start[0] = 0;
  for (int64_t k = 0; k < lm.elements; ++k) lm.gidx[k] = -1;
  for (int64_t j = 0; j < s->n; ++j)
    for (int64_t i = 0; i < s->m; ++i)
      if (row_of[i] >= 0 && col_of[j] >= 0) lm.gidx[row_of[i] + col_of[j] * ld] = i + j * s->m;
  free(row_of);
  free(col_of);
  return lm;
}

static LocalMap local_map(const Side* s, int me) {
  return strcmp(s->storage, "local_array") == 0 ? array_map(s, me) : tiles_map(s, me);
}

static uint64_t code_of(int64_t g) { return (uint64_t)g * 0x9E3779B97F4A7C15ull ^ 0xA5A5A5A5A5A5A5A5ull; }
static const uint64_t kSentinel = 0xFFFFFFFFFFFFFFFFull, kPadding = 0x0BADBADBADBADBADull;

static void put(unsigned char* buf, int64_t k, int64_t esize, uint64_t v) {
  if (esize == 4) {
    uint32_t w = (uint32_t)v;
    memcpy(buf + k * 4, &w, 4);
  } else {
    memcpy(buf + k * 8, &v, 8);
  }
}

static uint64_t get(const unsigned char* buf, int64_t k, int64_t esize) {
  if (esize == 4) {
    uint32_t w;
    memcpy(&w, buf + k * 4, 4);
    return w;
  }
  uint64_t v;
  memcpy(&v, buf + k * 8, 8);
  return v;
}

typedef struct {
  const char* name;
  Side src, dst;
  int64_t size[2], from[2], to[2]; /* the region; size 0x0: the whole array */
  int64_t elem_size;               /* options.elem_size (0: the spec's esize=8) */
  int from_specs;                  /* redist_make_plan_spec instead of layout handles */
  int strategy_in_options;         /* the strategy as options.strategy, else named at execute */
} Case;

/* The local size the library reports for a side agrees with the oracle's. */
static void check_local_size(const char* spec, const LocalMap* lm, const char* name) {
  redist_layout* l = NULL;
  int64_t blocks = -1, elements = -1;
  CHECK(redist_layout_create(spec, &l) == REDIST_SUCCESS, "%s: %s", name, redist_last_error());
  CHECK(redist_layout_local_size(l, test_rank, &blocks, &elements) == REDIST_SUCCESS, "%s", redist_last_error());
  CHECK(blocks == lm->nblocks && elements == lm->elements,
        "%s: %s: library %lld blocks %lld elements, oracle %lld %lld", name, spec, (long long)blocks,
        (long long)elements, (long long)lm->nblocks, (long long)lm->elements);
  for (int64_t b = 0; b + 1 < lm->nblocks; ++b) {
    int64_t e = -1;
    CHECK(redist_layout_block_elements(l, test_rank, b, &e) == REDIST_SUCCESS, "%s", redist_last_error());
    CHECK(e == lm->block_start[b + 1] - lm->block_start[b], "%s: block %lld holds %lld elements", name, (long long)b,
          (long long)e);
  }
  redist_layout_free(l);
}

static redist_plan* make(const Case* c, const char* strategy, const char* src_spec, const char* dst_spec) {
  char region[160] = "";
  if (c->size[0] > 0)
    snprintf(region, sizeof region, "%lldx%lld from=%lldx%lld to=%lldx%lld", (long long)c->size[0],
             (long long)c->size[1], (long long)c->from[0], (long long)c->from[1], (long long)c->to[0],
             (long long)c->to[1]);
  redist_options o = {0};
  o.elem_size = c->elem_size;
  if (c->strategy_in_options) o.strategy = strategy;
  /* Copy threads on the cases that name the strategy in the options (the ctest
     sets $REDIST_COPY_PART_BYTES=1: parts of any size, so these small cases are cut). */
  o.copy_threads = c->strategy_in_options ? 3 : 0;
  redist_plan* plan = NULL;
  redist_status st;
  if (c->from_specs) {
    st = redist_make_plan_spec(src_spec, dst_spec, region, MPI_COMM_WORLD, &o, &plan);
  } else {
    redist_layout *s = NULL, *d = NULL;
    redist_layout_create(src_spec, &s);
    redist_layout_create(dst_spec, &d);
    st = redist_make_plan(s, d, c->size[0] > 0 ? region : NULL, MPI_COMM_WORLD, &o, &plan);
    redist_layout_free(s);
    redist_layout_free(d);
  }
  CHECK(st == REDIST_SUCCESS && plan, "%s/%s: make_plan: %s %s", c->name, strategy, redist_status_name(st),
        redist_last_error());
  return plan;
}

/* Global index of the source element that the region moves to target element g, or -1. */
static int64_t source_of(const Case* c, int64_t g) {
  const int64_t i = g % c->dst.m, j = g / c->dst.m;
  const int64_t h = c->size[0] > 0 ? c->size[0] : c->src.m, w = c->size[0] > 0 ? c->size[1] : c->src.n;
  if (i < c->to[0] || i >= c->to[0] + h || j < c->to[1] || j >= c->to[1] + w) return -1;
  return (i - c->to[0] + c->from[0]) + (j - c->to[1] + c->from[1]) * c->src.m;
}

/* Sum over ranks of what the plan says this rank sends, receives and copies. */
static void check_stats(const Case* c, const redist_plan* plan, const char* strategy) {
  redist_plan_stats st;
  CHECK(redist_plan_get_stats(plan, &st) == REDIST_SUCCESS, "%s", redist_last_error());
  int64_t mine[3] = {st.bytes_sent, st.bytes_received, st.bytes_local}, sum[3];
  MPI_Allreduce(mine, sum, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const int64_t esize = c->elem_size ? c->elem_size : 8;
  const int64_t volume = c->size[0] > 0 ? c->size[0] * c->size[1] : c->src.m * c->src.n;
  CHECK(sum[0] == sum[1] && sum[0] + sum[2] == volume * esize, "%s/%s: stats sent %lld received %lld local %lld",
        c->name, strategy, (long long)sum[0], (long long)sum[1], (long long)sum[2]);
}

static void run_case(const Case* c, const char* strategy) {
  char src_spec[200], dst_spec[200];
  spec_of(&c->src, src_spec, sizeof src_spec);
  spec_of(&c->dst, dst_spec, sizeof dst_spec);
  const int64_t esize = c->elem_size ? c->elem_size : 8;
  LocalMap sm = local_map(&c->src, test_rank), dm = local_map(&c->dst, test_rank);
  check_local_size(src_spec, &sm, c->name);
  check_local_size(dst_spec, &dm, c->name);
  unsigned char* sbuf = malloc((size_t)(sm.elements * esize + 1));
  unsigned char* dbuf = malloc((size_t)(dm.elements * esize + 1));
  for (int64_t k = 0; k < sm.elements; ++k) put(sbuf, k, esize, sm.gidx[k] >= 0 ? code_of(sm.gidx[k]) : kPadding);
  const void** sblocks = malloc(sizeof(void*) * (size_t)(sm.nblocks + 1));
  void** dblocks = malloc(sizeof(void*) * (size_t)(dm.nblocks + 1));
  for (int64_t b = 0; b < sm.nblocks; ++b) sblocks[b] = sbuf + sm.block_start[b] * esize;
  for (int64_t b = 0; b < dm.nblocks; ++b) dblocks[b] = dbuf + dm.block_start[b] * esize;

  redist_plan* plan = make(c, strategy, src_spec, dst_spec);
  if (plan) check_stats(c, plan, strategy);
  for (int rep = 0; plan && rep < 2; ++rep) { /* a plan runs again */
    for (int64_t k = 0; k < dm.elements; ++k) put(dbuf, k, esize, kSentinel);
    redist_status st = redist_execute(plan, sblocks, sm.nblocks, dblocks, dm.nblocks,
                                      c->strategy_in_options ? NULL : strategy);
    CHECK(st == REDIST_SUCCESS, "%s/%s: execute: %s", c->name, strategy, redist_last_error());
    int64_t wrong = 0, first = -1;
    for (int64_t k = 0; k < dm.elements; ++k) {
      const int64_t g = dm.gidx[k], from = g >= 0 ? source_of(c, g) : -1;
      const uint64_t want = from >= 0 ? code_of(from) : kSentinel, mask = esize == 4 ? 0xFFFFFFFFull : ~0ull;
      if (get(dbuf, k, esize) != (want & mask)) wrong += 1, first = first < 0 ? k : first;
    }
    CHECK(wrong == 0, "%s/%s, run %d: %lld of %lld target elements wrong, the first at local %lld (global %lld)",
          c->name, strategy, rep, (long long)wrong, (long long)dm.elements, (long long)first,
          (long long)(first >= 0 ? dm.gidx[first] : -1));
  }
  redist_plan_free(plan);
  free(sblocks), free(dblocks), free(sbuf), free(dbuf);
  free(sm.gidx), free(sm.block_start), free(dm.gidx), free(dm.block_start);
}

int main(int argc, char** argv) {
  test_init(&argc, &argv);
  const int P = test_ranks;
  const int gr = P == 4 ? 2 : 1, gc = P == 4 ? 2 : P; /* a 2-D grid when there is one */
  const Case cases[] = {
      /* ragged 3x4 tiles on a column of ranks -> ragged 5x2 tiles in ScaLAPACK storage on a row */
      {"whole", {13, 11, 3, 4, P, 1, 0, 0, 0, "tile"}, {13, 11, 5, 2, 1, P, 0, 0, 0, "local_array"},
       {0, 0}, {0, 0}, {0, 0}, 0, 0, 1},
      /* a region at offsets, source process not 0, one pointer per target tile, column order */
      {"region", {13, 11, 3, 4, gr, gc, gr - 1, gc - 1, 0, "local_array"},
       {9, 8, 2, 3, P, 1, 0, 0, 1, "tile_pointers"}, {7, 5}, {2, 3}, {1, 2}, 0, 0, 0},
      /* cyclic(1) on a row of ranks gathered into one tile on rank 0 */
      {"gather", {10, 7, 1, 1, 1, P, 0, 0, 0, "tile"}, {10, 7, 10, 7, 1, 1, 0, 0, 0, "local_array"},
       {0, 0}, {0, 0}, {0, 0}, 0, 1, 1},
      /* 4-byte elements (options.elem_size) scattered from rank 0 to 2x2 tiles */
      {"scatter_esize4", {11, 9, 11, 9, 1, 1, 0, 0, 0, "local_array"}, {11, 9, 2, 2, gr, gc, 0, gc - 1, 1, "tile"},
       {0, 0}, {0, 0}, {0, 0}, 4, 1, 0},
      /* a submatrix touching the far edges of both arrays, ragged tiles on both sides */
      {"submatrix", {37, 29, 8, 5, gr, gc, 0, gc - 1, 1, "local_array"}, {20, 30, 7, 4, P, 1, P - 1, 0, 0, "tile"},
       {15, 13}, {21, 16}, {5, 17}, 0, 0, 1},
  };
  const int ncases = (int)(sizeof cases / sizeof cases[0]);
  CHECK(redist_strategy_count() >= 2, "%d strategies", redist_strategy_count());
  int runs = 0;
  for (int s = 0; s < redist_strategy_count(); ++s)
    for (int i = 0; i < ncases; ++i, ++runs) run_case(&cases[i], redist_strategy_name(s));
  run_case(&cases[0], "auto"); /* options.strategy = "auto": the cost model picks one */
  ++runs;
  return test_finish("test_capi", runs);
}
