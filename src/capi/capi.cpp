// The C API (include/redist/redist.h): handles over the C++ values, and the
// boundary where every C++ exception becomes a status and a thread-local message.
// No logic of its own: layouts, regions, validation and plans are the core's.
#include "redist/redist.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi/agree.hpp"
#include "redist/exec.hpp"
#include "redist/shm.hpp"

struct redist_layout {
  redist::Layout layout;
  std::string spec;  // canonical, returned by redist_layout_spec
  // The storage map of the last rank asked about (redist_layout_local_size).
  std::mutex mutex;
  std::optional<redist::LocalIndex> local;
  int local_rank = -1;
};

struct redist_plan {
  redist::Plan plan;
};

namespace {

using redist::detail::cat;

thread_local std::string last_error;

redist_status fail(redist_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

redist_status ok() {
  last_error.clear();
  return REDIST_SUCCESS;
}

// Runs f at the boundary: returns REDIST_SUCCESS, or maps what it threw.
template <class F>
redist_status guard(F&& f) {
  try {
    f();
    return ok();
  } catch (const redist::MpiError& e) {
    return fail(REDIST_ERR_MPI, e.what());
  } catch (const redist::MismatchError& e) {  // ranks disagreed (agreed: the same on every rank)
    return fail(REDIST_ERR_MISMATCH, e.what());
  } catch (const redist::Error& e) {
    return fail(REDIST_ERR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(REDIST_ERR_OUT_OF_MEMORY, "redist: out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return fail(REDIST_ERR_INTERNAL, cat("redist: internal error: ", e.what()));
  } catch (...) {
    return fail(REDIST_ERR_INTERNAL, "redist: internal error: an exception of unknown type");
  }
}

redist_status null_argument(const char* function, const char* name) {
  return fail(REDIST_ERR_INVALID_ARGUMENT, cat("redist: ", function, ": ", name, " is NULL"));
}

// A rank's verdict on its own arguments, before any communication.
struct Local {
  redist_status status = REDIST_SUCCESS;
  std::string message;
  void set(redist_status s, std::string m) {
    if (status == REDIST_SUCCESS) status = s, message = std::move(m);
  }
};

// REDIST_SUCCESS while MPI runs, else the core's error (detail::outside_mpi):
// Open MPI aborted the job at agree_local's first MPI call there, where the C++
// API throws.
redist_status outside_mpi(const char* function, const char* why = redist::detail::kPlanNeedsMpi) {
  std::string e = redist::detail::outside_mpi(function, why);
  return e.empty() ? REDIST_SUCCESS : fail(REDIST_ERR_INVALID_ARGUMENT, std::move(e));
}

// Collective: every rank returns the status and message of the lowest rank whose
// `local` is not a success (redist: rank R: ...), or REDIST_SUCCESS everywhere.
redist_status agree_local(MPI_Comm comm, const Local& local) {
  redist_status agreed = REDIST_SUCCESS;
  const redist_status status = guard([&] {
    using redist::detail::check_mpi;
    int rank = 0, first = INT_MAX;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
    int mine = local.status == REDIST_SUCCESS ? INT_MAX : rank;
    check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
    if (first == INT_MAX) return;
    int code = local.status;
    check_mpi(MPI_Bcast(&code, 1, MPI_INT, first, comm), "MPI_Bcast", comm);
    agreed = static_cast<redist_status>(code);
    redist::detail::agree(comm, local.message);  // throws the first rank's message on every rank
  });
  if (status == REDIST_ERR_MPI || agreed == REDIST_SUCCESS) return status;
  return fail(agreed, last_error);
}

// The layout of `spec`, or what is wrong with it in `local` (its message begins
// with `prefix`: "source layout: ").
std::optional<redist::Layout> parse_layout(const char* spec, const char* prefix, Local& local) {
  if (!spec) {
    local.set(REDIST_ERR_INVALID_ARGUMENT, cat(prefix, "the spec is NULL"));
    return std::nullopt;
  }
  try {
    return redist::Layout::parse(spec);
  } catch (const redist::Error& e) {
    local.set(REDIST_ERR_INVALID_SPEC, cat(prefix, e.what()));
  } catch (const std::bad_alloc&) {
    local.set(REDIST_ERR_OUT_OF_MEMORY, "out of memory (std::bad_alloc)");
  }
  return std::nullopt;
}

redist::Layout with_elem_size(const redist::Layout& l, int64_t elem_size) {
  if (elem_size == 0) return l;
  return redist::Layout(l.shape(), l.partitions(), l.ownership(), l.storage(), elem_size);
}

// make_plan's C arguments checked on this rank, then agreed, then the C++ make_plan.
redist_status make_plan(const char* function, std::optional<redist::Layout> src, std::optional<redist::Layout> dst,
                        const char* region, MPI_Comm comm, const redist_options* options, redist_plan** plan,
                        Local& local) {
  if (plan) *plan = nullptr;
  if (comm == MPI_COMM_NULL)
    return fail(REDIST_ERR_INVALID_ARGUMENT, "redist: make_plan needs a communicator, got MPI_COMM_NULL");
  if (redist_status s = outside_mpi(function); s != REDIST_SUCCESS) return s;
  // Local, before this layer's own agreement: a broadcast over an intercommunicator
  // waited forever (the core's make_plan, which refuses it, was never reached).
  if (std::string e = redist::detail::intercomm_problem(comm, "redist: make_plan"); !e.empty())
    return fail(REDIST_ERR_INVALID_ARGUMENT, std::move(e));
  if (!plan) local.set(REDIST_ERR_INVALID_ARGUMENT, "plan is NULL (pass the address of a redist_plan*)");
  redist::Options o;
  redist::Region r;
  if (options) {
    if (options->strategy && *options->strategy) o.strategy = options->strategy;
    if (options->max_message_bytes != 0) o.max_message_bytes = options->max_message_bytes;
    if (options->calibration) o.calibration = options->calibration;
    o.auto_trials = options->auto_trials;  // checked (>= 0) by the core's make_plan, agreed
    o.copy_threads = options->copy_threads;  // checked (0..1024) by the core's make_plan, agreed
    if (options->elem_size < 0)
      local.set(REDIST_ERR_INVALID_ARGUMENT, cat("options.elem_size must be >= 0 (0: the layouts' esize), got ",
                                                 options->elem_size));
  }
  if (region && *region) try {
      r = redist::Region::parse(region);
    } catch (const redist::Error& e) {
      local.set(REDIST_ERR_INVALID_SPEC, cat("region: ", e.what()));
    }
  else if (src)
    r = redist::Region::whole(src->shape());
  if (redist_status s = agree_local(comm, local); s != REDIST_SUCCESS) return s;
  const int64_t esize = options ? options->elem_size : 0;
  return guard([&] {
    // Before the layouts (which it changes): named as the option it is.
    redist::detail::agree_same(comm, {{"options.elem_size differs", std::to_string(esize)}},
                               "every rank must pass the same (0: the layouts' esize)");
    auto p = std::make_unique<redist_plan>(
        redist_plan{redist::make_plan(with_elem_size(*src, esize), with_elem_size(*dst, esize), r, comm, o)});
    *plan = p.release();
  });
}

// The layout's storage map for `rank`, built once per rank asked (under its mutex).
template <class F>
redist_status with_local(const redist_layout* layout, int rank, const char* function, F&& f) {
  if (!layout) return null_argument(function, "layout");
  auto* l = const_cast<redist_layout*>(layout);  // the cache only; the layout's value does not change
  std::lock_guard<std::mutex> lock(l->mutex);
  return guard([&] {
    if (rank < 0) redist::detail::fail("redist: ", function, ": rank must be >= 0, got ", rank);
    if (!l->local || l->local_rank != rank) {
      l->local.reset();
      l->local.emplace(l->layout, rank);
      l->local_rank = rank;
    }
    f(*l->local);
  });
}

}  // namespace

extern "C" {

const char* redist_status_name(redist_status status) {
  switch (status) {
    case REDIST_SUCCESS: return "REDIST_SUCCESS";
    case REDIST_ERR_INVALID_ARGUMENT: return "REDIST_ERR_INVALID_ARGUMENT";
    case REDIST_ERR_INVALID_SPEC: return "REDIST_ERR_INVALID_SPEC";
    case REDIST_ERR_MISMATCH: return "REDIST_ERR_MISMATCH";
    case REDIST_ERR_MPI: return "REDIST_ERR_MPI";
    case REDIST_ERR_OUT_OF_MEMORY: return "REDIST_ERR_OUT_OF_MEMORY";
    case REDIST_ERR_INTERNAL: return "REDIST_ERR_INTERNAL";
  }
  return "unknown";
}

const char* redist_last_error(void) { return last_error.c_str(); }

int redist_strategy_count(void) { return static_cast<int>(redist::strategies().size()); }

const char* redist_strategy_name(int index) {
  const auto& all = redist::strategies();
  return index >= 0 && index < static_cast<int>(all.size()) ? all[static_cast<size_t>(index)].name.c_str() : nullptr;
}

redist_status redist_layout_create(const char* spec, redist_layout** layout) {
  if (!layout) return null_argument("redist_layout_create", "layout");
  *layout = nullptr;
  if (!spec) return null_argument("redist_layout_create", "spec");
  Local local;
  std::optional<redist::Layout> l = parse_layout(spec, "redist: ", local);
  if (!l) return fail(local.status, local.message);
  return guard([&] {
    auto h = std::make_unique<redist_layout>();
    h->spec = l->spec();
    h->layout = std::move(*l);
    *layout = h.release();
  });
}

void redist_layout_free(redist_layout* layout) { delete layout; }

const char* redist_layout_spec(const redist_layout* layout) { return layout ? layout->spec.c_str() : nullptr; }

redist_status redist_layout_check(const redist_layout* layout, int comm_size) {
  if (!layout) return null_argument("redist_layout_check", "layout");
  if (comm_size < 1)
    return fail(REDIST_ERR_INVALID_ARGUMENT, redist::detail::cat("redist: redist_layout_check: comm_size ", comm_size,
                                                                 ": a communicator has at least 1 rank"));
  std::string e = layout->layout.check(comm_size);
  return e.empty() ? ok() : fail(REDIST_ERR_INVALID_ARGUMENT, "redist: " + e);
}

redist_status redist_layout_local_size(const redist_layout* layout, int rank, int64_t* blocks, int64_t* elements) {
  return with_local(layout, rank, "redist_layout_local_size", [&](const redist::LocalIndex& li) {
    if (blocks) *blocks = li.nblocks();
    if (elements) *elements = li.elements();
  });
}

redist_status redist_layout_block_elements(const redist_layout* layout, int rank, int64_t block, int64_t* elements) {
  if (!elements) return null_argument("redist_layout_block_elements", "elements");
  return with_local(layout, rank, "redist_layout_block_elements", [&](const redist::LocalIndex& li) {
    if (block < 0 || block >= li.nblocks())
      redist::detail::fail("redist: redist_layout_block_elements: block ", block, " is outside [0, ", li.nblocks(),
                           ") for rank ", rank);
    *elements = li.block_elements(block);
  });
}

redist_status redist_make_plan(const redist_layout* src, const redist_layout* dst, const char* region, MPI_Comm comm,
                               const redist_options* options, redist_plan** plan) {
  Local local;
  if (!src) local.set(REDIST_ERR_INVALID_ARGUMENT, "source layout is NULL (did redist_layout_create fail here?)");
  if (!dst) local.set(REDIST_ERR_INVALID_ARGUMENT, "target layout is NULL (did redist_layout_create fail here?)");
  std::optional<redist::Layout> s, d;
  if (src && dst) s = src->layout, d = dst->layout;
  return make_plan("redist_make_plan", std::move(s), std::move(d), region, comm, options, plan, local);
}

redist_status redist_make_plan_spec(const char* src_spec, const char* dst_spec, const char* region, MPI_Comm comm,
                                    const redist_options* options, redist_plan** plan) {
  Local local;
  std::optional<redist::Layout> s = parse_layout(src_spec, "source layout: ", local);
  std::optional<redist::Layout> d = parse_layout(dst_spec, "target layout: ", local);
  if (!s || !d) s.reset(), d.reset();
  return make_plan("redist_make_plan_spec", std::move(s), std::move(d), region, comm, options, plan, local);
}

redist_status redist_execute(redist_plan* plan, const void* const* src_blocks, int64_t src_count,
                             void* const* dst_blocks, int64_t dst_count, const char* strategy) {
  if (!plan) return null_argument("redist_execute", "plan");
  // A NULL array is passed on as no pointers: the core's agreed check then names
  // the count it expected on this rank. A negative count joins that agreement as
  // this rank's error (returning at once would leave the other ranks waiting).
  const size_t ns = src_blocks && src_count > 0 ? static_cast<size_t>(src_count) : 0;
  const size_t nd = dst_blocks && dst_count > 0 ? static_cast<size_t>(dst_count) : 0;
  using redist::detail::cat;
  const std::string err = src_count < 0   ? cat("redist_execute: src_count ", src_count, " is negative")
                          : dst_count < 0 ? cat("redist_execute: dst_count ", dst_count, " is negative")
                          : !src_blocks && src_count > 0
                              ? cat("redist_execute: src_blocks is NULL but src_count is ", src_count)
                          : !dst_blocks && dst_count > 0
                              ? cat("redist_execute: dst_blocks is NULL but dst_count is ", dst_count)
                              : std::string();
  return guard([&] {
    plan->plan.execute(std::span<const void* const>(src_blocks, ns), std::span<void* const>(dst_blocks, nd),
                       strategy ? strategy : "", err);
  });
}

redist_status redist_shared_allocate(MPI_Comm comm, int64_t bytes, void** ptr) {
  if (ptr) *ptr = nullptr;
  if (redist_status s = outside_mpi("redist_shared_allocate", redist::detail::kWindowNeedsMpi); s != REDIST_SUCCESS) return s;
  if (comm == MPI_COMM_NULL)
    return fail(REDIST_ERR_INVALID_ARGUMENT, "redist: redist_shared_allocate: comm is MPI_COMM_NULL");
  if (std::string e = redist::detail::intercomm_problem(comm, "redist: shared_allocate"); !e.empty())
    return fail(REDIST_ERR_INVALID_ARGUMENT, std::move(e));
  Local local;
  if (!ptr) local.set(REDIST_ERR_INVALID_ARGUMENT, "redist_shared_allocate: ptr is NULL");
  if (redist_status s = agree_local(comm, local); s != REDIST_SUCCESS) return s;
  return guard([&] { *ptr = redist::shared_allocate(comm, bytes); });  // bytes < 0: agreed there
}

redist_status redist_shared_free(void* ptr) {
  if (!ptr) return REDIST_SUCCESS;  // frees nothing, MPI or not
  if (redist_status s = outside_mpi("redist_shared_free", redist::detail::kWindowNeedsMpi); s != REDIST_SUCCESS) return s;
  return guard([&] { redist::shared_free(ptr); });
}

redist_status redist_execute_buffers(redist_plan* plan, const void* src, void* dst, const char* strategy) {
  return redist_execute(plan, &src, 1, &dst, 1, strategy);
}

void redist_plan_free(redist_plan* plan) { delete plan; }

MPI_Comm redist_plan_comm(const redist_plan* plan) { return plan ? plan->plan.comm() : MPI_COMM_NULL; }

const char* redist_plan_auto_choice(const redist_plan* plan) {
  return plan ? plan->plan.auto_choice().c_str() : nullptr;
}

}  // extern "C"

namespace {

// redist_plan_predictions(_storage), its messages naming `function`.
redist_status predictions(const char* function, redist_plan* plan, const char* storage, double* seconds,
                          int64_t count) {
  if (!plan) return null_argument(function, "plan");
  if (redist_status s = outside_mpi(function); s != REDIST_SUCCESS) return s;
  Local local;
  const int64_t n = redist_strategy_count();
  if (!seconds)
    local.set(REDIST_ERR_INVALID_ARGUMENT, cat(function, ": seconds is NULL"));
  else if (count < n)
    local.set(REDIST_ERR_INVALID_ARGUMENT, cat(function, ": seconds holds ", count,
                                               " values; redist_strategy_count() is ", n));
  else if (!storage || (std::strcmp(storage, "heap") != 0 && std::strcmp(storage, "shared") != 0))
    local.set(REDIST_ERR_INVALID_ARGUMENT, cat(function, ": storage '", storage ? storage : "(NULL)",
                                               "': expected heap or shared"));
  if (redist_status s = agree_local(plan->plan.comm(), local); s != REDIST_SUCCESS) return s;
  return guard([&] {
    const std::vector<double> t = plan->plan.predictions_for(storage);  // collective, agrees on a missing model
    std::copy(t.begin(), t.end(), seconds);
  });
}

}  // namespace

extern "C" {

redist_status redist_plan_predictions_storage(redist_plan* plan, const char* storage, double* seconds,
                                              int64_t count) {
  return predictions("redist_plan_predictions_storage", plan, storage, seconds, count);
}

redist_status redist_plan_predictions(redist_plan* plan, double* seconds, int64_t count) {
  return predictions("redist_plan_predictions", plan, "heap", seconds, count);
}

redist_status redist_plan_get_stats(const redist_plan* plan, redist_plan_stats* stats) {
  if (!plan) return null_argument("redist_plan_get_stats", "plan");
  if (!stats) return null_argument("redist_plan_get_stats", "stats");
  const redist::PlanStats& s = plan->plan.stats();
  *stats = {s.bytes_sent,    s.bytes_received,    s.bytes_local,  s.messages_sent,
            s.messages_received, s.segments_sent, s.segments_received, s.local_copies,
            s.runs_sent,     s.runs_received,     s.local_runs,   s.plan_bytes,
            s.target_tiles,  s.max_segments_per_tile, s.segments_per_tile_total};
  return ok();
}

}  // extern "C"
