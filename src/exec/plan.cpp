// make_plan and Plan: collective validation, planning, buffer checks, and the
// dispatch to the strategy named (its state made on first use, from the registry).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include "exec/shm_window.hpp"
#include "exec/threads.hpp"
#include "exec/strategy.hpp"
#include "mpi/agree.hpp"

namespace redist {

using detail::agree;
using detail::check_mpi;

class PlanImpl {
 public:
  detail::PlanCore core;
  std::shared_ptr<const Machine> machine;  // auto's model, fixed at make_plan (may be null)
  std::string auto_choice;                 // decided on the first execute with auto
  // Options::auto_trials: the two candidates and each one's times so far.
  std::vector<int> trial_candidates;
  std::vector<double> trial_times[2];
  std::vector<std::pair<int, double>> trial_log;  // (candidate 0/1, seconds) in the order run (Plan::auto_trial_runs)
  // Per registry entry: its state, made on first use, and the entry that runs in
  // its place (itself, or its fallback when not available here).
  std::vector<std::unique_ptr<detail::Strategy>> states;
  std::vector<int> runs_as;
  // With a memory budget: per registry entry, its extra_memory's max over ranks.
  std::vector<index_t> extra_max;
  // Set while one thread runs a collective of the plan (OneThread, below).
  std::atomic<bool> busy{false};
  // The MpiError an execute threw here, empty if none (docs/strategies.md, "Faults").
  std::string failed;
  // Executes since the strategies' state was last dropped (Options::executions).
  index_t executed = 0;
  // The registry entry the last execute ran (-1: none yet, or its state dropped).
  int last_run = -1;
  // An auto trial of candidate k took `seconds` here; after the last, auto keeps
  // the candidate with the smaller median, the slowest rank's (collective).
  void end_trial(int k, double seconds) {
    trial_times[k].push_back(seconds);
    trial_log.emplace_back(k, seconds);
    if (trial_times[0].size() + trial_times[1].size() < 2 * static_cast<size_t>(core.options.auto_trials)) return;
    double med[2];
    for (int c = 0; c < 2; ++c) {
      std::vector<double>& v = trial_times[c];
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      med[c] = v[v.size() / 2];
    }
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, med, 2, MPI_DOUBLE, MPI_MAX, core.comm), "MPI_Allreduce", core.comm);
    auto_choice = detail::registry()[static_cast<size_t>(trial_candidates[med[1] < med[0] ? 1 : 0])].name;
  }
  // Options::executions reached: every strategy's state and the scratch buffers go.
  void drop_state() {
    last_run = -1;
    for (auto& st : states) st.reset();
    std::fill(runs_as.begin(), runs_as.end(), -1);
    core.drop_scratch();
  }

  ~PlanImpl() {
    if (!failed.empty()) {
      // Requests may still be in flight into the strategies' state and the scratch
      // buffers: keep them all (a leak).
      for (auto& st : states) detail::leak_on_purpose(st.release());
      core.abandon_scratch();
    } else {
      states.clear();  // strategies free their MPI objects before the communicator goes
    }
    // Freeing the communicator is safe even after an MPI error: MPI only marks it
    // for deallocation, and operations still pending on it complete normally
    // (MPI 3.1, 6.4.3); neither Open MPI nor MPICH communicates in MPI_Comm_free.
    // unchecked: a destructor, nothing to do if the communicator cannot be freed
    int finalized = 0;
    MPI_Finalized(&finalized);  // unchecked (above)
    if (!finalized && core.owns_comm && core.comm != MPI_COMM_NULL) MPI_Comm_free(&core.comm);
  }
  // The state of registry entry `i`, made (and probed, collectively) on first use.
  detail::Strategy& state(int i);
  // Plan::execute's and Plan::predictions' work, run by the thread that holds the plan.
  void execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks, std::string_view strategy,
               std::string_view caller_error = {});
  // heap: every strategy with a model condition predicts its heap model (src_blocks unused).
  std::vector<double> predictions(std::span<const void* const> src_blocks = {}, bool heap = false);
};

namespace {

std::string local_checks(const Layout& src, const Layout& dst, std::span<const Region> regions, int size) {
  using detail::cat;
  std::string e = src.check(size);
  if (!e.empty()) return "source layout: " + e;
  e = dst.check(size);
  if (!e.empty()) return "target layout: " + e;
  if (src.ndim() != dst.ndim())
    return cat("dimension mismatch: source has ", src.ndim(), " dimensions, target has ", dst.ndim());
  if (src.elem_size() != dst.elem_size())
    return cat("element size mismatch: source esize=", src.elem_size(), ", target esize=",
               dst.elem_size());
  if (regions.size() == 1) return regions[0].check(src.shape(), dst.shape());
  return check_regions(regions, src.shape(), dst.shape());
}

void check_side(const char* side, size_t given, const LocalIndex& li, const Layout& l,
                const void* const* ptr, std::string& err) {
  if (!err.empty()) return;
  if (static_cast<index_t>(given) != li.nblocks()) {
    err = l.storage().kind == StorageKind::tile_pointers
              ? detail::cat(side, " storage=tile_pointers: expected one pointer per local tile (",
                            li.nblocks(), "), got ", given)
              : detail::cat(side, ": expected one buffer, got ", given, " pointers");
    return;
  }
  for (size_t b = 0; b < given; ++b)
    if (!ptr[b] && li.block_elements(static_cast<index_t>(b)) > 0) {
      err = detail::cat(side, " buffer ", b, " is null but this rank stores ",
                        li.block_elements(static_cast<index_t>(b)), " elements there");
      return;
    }
}

// Source and target memory must be disjoint (no in-place redistribution), and
// so must the target's blocks (tile_pointers: one tile's result would overwrite
// another's); source blocks may share memory (they are only read).
std::string overlap_check(const detail::PlanCore& p, std::span<const void* const> s, std::span<void* const> d) {
  const char* kOverlap = "source and target buffers overlap; redistribution is not in place: use separate buffers";
  const char* kTargets =
      "two of the target's local tile buffers overlap (storage=tile_pointers): each tile needs memory of its own";
  const index_t es = p.src.elem_size();
  if (s.size() == 1 && d.size() == 1) {  // one buffer per side: no sort, no allocation
    const auto sl = reinterpret_cast<std::uintptr_t>(s[0]), dl = reinterpret_cast<std::uintptr_t>(d[0]);
    const auto sh = sl + static_cast<std::uintptr_t>(p.src_local->elements() * es);
    const auto dh = dl + static_cast<std::uintptr_t>(p.dst_local->elements() * es);
    return s[0] && d[0] && sh > sl && dh > dl && sl < dh && dl < sh ? kOverlap : "";
  }
  struct Range { std::uintptr_t lo, hi; int side; };
  std::vector<Range> r;
  for (size_t b = 0; b < s.size(); ++b)
    if (s[b]) {
      auto lo = reinterpret_cast<std::uintptr_t>(s[b]);
      r.push_back({lo, lo + static_cast<std::uintptr_t>(p.src_local->block_elements(b) * es), 0});
    }
  for (size_t b = 0; b < d.size(); ++b)
    if (d[b]) {
      auto lo = reinterpret_cast<std::uintptr_t>(d[b]);
      r.push_back({lo, lo + static_cast<std::uintptr_t>(p.dst_local->block_elements(b) * es), 1});
    }
  std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::uintptr_t max_hi[2] = {0, 0};
  const char* targets = nullptr;  // source-target overlap first: it names the bigger mistake
  for (const Range& x : r) {
    if (x.hi <= x.lo) continue;
    if (x.lo < max_hi[1 - x.side]) return kOverlap;
    if (x.side == 1 && x.lo < max_hi[1]) targets = kTargets;
    max_hi[x.side] = std::max(max_hi[x.side], x.hi);
  }
  return targets ? targets : std::string();
}

// A layout as ranks must agree on it: everything but `ld=`, which is each rank's
// own (ScaLAPACK's LLD differs between processes; a rank's plan only ever
// addresses its own storage, so another rank's leading dimension never matters).
std::string agreed_spec(const Layout& l) {
  if (l.storage().ld == 0) return l.spec();
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{l.storage().kind, 0}, l.elem_size()).spec();
}

// Empty unless `strategy` cannot apply `a` (StrategyEntry::arithmetic).
std::string arithmetic_refused(std::string_view strategy, const Arithmetic& a) {
  if (a.identity() || strategy == kAuto) return {};
  const int i = detail::find_strategy(strategy);
  if (i < 0 || detail::registry()[static_cast<size_t>(i)].arithmetic) return {};
  return detail::cat("strategy ", strategy, " writes the target without unpacking and cannot apply options.arithmetic (",
                     a.str(), "); strategies that can: ", arithmetic_strategies(), ", auto");
}

// Every rank must describe the same redistribution (compared with rank 0).
// Options count too: another max_message_bytes splits messages differently on
// sender and receiver, another default strategy pairs different message schemes;
// both would hang or truncate instead of failing. The error path of agree_plan
// (below): the items as text, compared with rank 0's, for the message.
void agree_same_everywhere(const detail::PlanCore& p, const Layout& src, const Layout& dst,
                           std::span<const Region> regions, const Options& options) {
  std::string region_text;
  for (const Region& r : regions) region_text += (region_text.empty() ? "" : "; ") + r.str();
  detail::agree_same(p.comm,
                     {{"source layout differs", agreed_spec(src)},
                      {"target layout differs", agreed_spec(dst)},
                      {regions.size() == 1 ? "region differs" : "regions differ", region_text},
                      {"options differ",
                       detail::cat("strategy=", options.strategy, " max_message_bytes=", options.max_message_bytes,
                                   " max_buffer_bytes=", options.max_buffer_bytes,
                                   " arithmetic=", options.arithmetic.str(),
                                   " calibration=", options.calibration, " duplicate_comm=", options.duplicate_comm,
                                   " machine=", options.machine ? "given" : "none", " model=", options.model,
                                   " taskgraph=", options.taskgraph.threads, ",", options.taskgraph.batch, ",",
                                   options.taskgraph.isolate_segments, options.taskgraph.dynamic_volume,
                                   options.taskgraph.multiple_send, ",", options.taskgraph.eager_limit, ",",
                                   options.taskgraph.validate, ",", options.taskgraph.grain, ",",
                                   options.taskgraph.comm_thread, ",", options.taskgraph.datatypes,
                                   " node_size=", options.node_size, " executions=", options.executions,
                                   " auto_trials=", options.auto_trials)}},
                     "every rank must pass the same");
}

// What agree_same_everywhere's texts say, hashed from the values without
// printing them (the common path: every rank the same, one word each way in
// agree_plan's reduction). A running splitmix64 over 64-bit words; every
// variable-length part is preceded by its length.
struct ValueHash {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  void add(std::uint64_t x) { h = mix64(h ^ x); }
  void add_signed(std::int64_t x) { add(static_cast<std::uint64_t>(x)); }
  void add(double x) {
    if (x == 0) x = 0;  // -0 prints as 0
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    add(bits);
  }
  void add(std::string_view s) {
    add(static_cast<std::uint64_t>(s.size()));
    for (size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
      add(w);
    }
  }
  void add(const Coord& c) {
    add(static_cast<std::uint64_t>(c.ndim()));
    for (index_t x : c) add_signed(x);
  }
  template <class T>
  void add_all(const std::vector<T>& v) {
    add(static_cast<std::uint64_t>(v.size()));
    for (const T& x : v) add_signed(x);
  }
};

void hash_layout(ValueHash& h, const Layout& l, bool with_ld);

// Everything Layout::spec prints of an ownership.
void hash_ownership(ValueHash& h, const Ownership& o) {
  h.add(static_cast<std::uint64_t>(o.kind()));
  switch (o.kind()) {
    case Ownership::Kind::block_cyclic: {
      const BlockCyclicParams& b = o.bc();
      h.add(b.grid), h.add(static_cast<std::uint64_t>(b.order)), h.add(b.source), h.add(b.super);
      h.add_signed(b.first_rank);
      h.add(static_cast<std::uint64_t>(b.map != nullptr));
      if (b.map) h.add_all(*b.map);
      return;
    }
    case Ownership::Kind::random:
      h.add(o.rnd().seed), h.add_signed(o.rnd().ranks), h.add_signed(o.rnd().first_rank);
      return;
    case Ownership::Kind::band:
      h.add_signed(o.bnd().width);
      hash_ownership(h, *o.bnd().near);
      hash_ownership(h, *o.bnd().far);
      return;
    case Ownership::Kind::table:
      h.add_all(*o.tbl().owners);
      return;
    case Ownership::Kind::function:
      h.add(std::string_view(o.fun().name)), h.add_signed(o.fun().ranks);
      return;
    case Ownership::Kind::placement:
      h.add(static_cast<std::uint64_t>(o.plc().rule));
      h.add(static_cast<std::uint64_t>(o.plc().of != nullptr));
      if (o.plc().of) hash_layout(h, *o.plc().of, true);
      return;
  }
}

// Everything Layout::spec prints (agreed_spec's: without ld= unless `with_ld`).
void hash_layout(ValueHash& h, const Layout& l, bool with_ld) {
  h.add(l.shape());
  h.add(static_cast<std::uint64_t>(l.partitions().size()));
  for (const DimPartition& d : l.partitions()) {
    h.add(static_cast<std::uint64_t>(d.is_regular()));
    if (d.is_regular()) h.add_signed(d.extent()), h.add_signed(d.tile()), h.add_signed(d.offset());
    else h.add_all(d.bounds());
  }
  h.add_signed(l.elem_size());
  h.add(static_cast<std::uint64_t>(l.storage().kind));
  if (with_ld) h.add_signed(l.storage().ld);
  hash_ownership(h, l.ownership());
}

std::uint64_t same_hash(const Layout& src, const Layout& dst, std::span<const Region> regions, const Options& o) {
  ValueHash h;
  hash_layout(h, src, false);
  hash_layout(h, dst, false);
  h.add(static_cast<std::uint64_t>(regions.size()));
  for (const Region& r : regions) {
    h.add(r.size), h.add(r.src_offset), h.add(r.dst_offset);
    h.add(r.permutes() ? r.axes : Coord());
  }
  h.add(std::string_view(o.strategy));
  h.add_signed(o.max_message_bytes), h.add_signed(o.max_buffer_bytes);
  const Arithmetic& a = o.arithmetic;
  h.add(static_cast<std::uint64_t>(a.type));
  h.add(static_cast<std::uint64_t>(a.identity()));
  if (!a.identity()) {
    h.add(a.alpha.real()), h.add(a.alpha.imag()), h.add(a.beta.real()), h.add(a.beta.imag());
    h.add(static_cast<std::uint64_t>(a.conjugate));
  }
  h.add(std::string_view(o.calibration));
  h.add(static_cast<std::uint64_t>(o.duplicate_comm)), h.add(static_cast<std::uint64_t>(o.machine != nullptr));
  h.add(static_cast<std::uint64_t>(o.model));
  const TaskgraphOptions& t = o.taskgraph;
  h.add_signed(t.threads), h.add_signed(t.batch), h.add(static_cast<std::uint64_t>(t.isolate_segments));
  h.add(static_cast<std::uint64_t>(t.dynamic_volume)), h.add(static_cast<std::uint64_t>(t.multiple_send));
  h.add_signed(t.eager_limit), h.add(static_cast<std::uint64_t>(t.validate)), h.add_signed(t.grain);
  h.add(static_cast<std::uint64_t>(t.comm_thread)), h.add(static_cast<std::uint64_t>(t.datatypes));
  h.add_signed(o.node_size), h.add_signed(o.executions), h.add_signed(o.auto_trials);
  return h.h;
}

// Runs f; returns what it threw as a message (empty when it returned), so that
// the caller can agree on it: an exception escaping on one rank only would
// leave the others blocked in the next collective.
template <class F>
std::string catch_error(F&& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return "out of memory while planning (std::bad_alloc)";
  } catch (const std::exception& e) {
    return detail::cat("unexpected exception: ", e.what());
  }
}

// Collective, after the storage maps were built: an owner function may answer
// differently on different ranks under the same name (equal specs), which would
// pair sends and receives that do not match. Ranks compare a hash of the owner
// of every tile (the maps of general ownerships visit every tile anyway); on a
// difference they find the first differing tile, in chunks, and every rank
// throws the same message. Per-dimension ownerships are closed-form: skipped.
void agree_owners(const detail::PlanCore& p) {
  if (p.src.ownership().per_dimension() && p.dst.ownership().per_dimension()) return;  // same on every rank
  const std::uint64_t hs = p.src_local->owners_hash(), hd = p.dst_local->owners_hash();
  std::uint64_t h[4] = {hs, ~hs, hd, ~hd};  // max and ~min in one MPI_MAX
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, h, 4, MPI_UINT64_T, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
  for (int s = 0; s < 2; ++s) {
    if (h[2 * s] == ~h[2 * s + 1]) continue;
    const Layout& l = s == 0 ? p.src : p.dst;
    const Coord nt = l.ntiles();
    const index_t total = nt.volume();
    auto tile_at = [&nt](index_t lin) {  // column-major tile order
      Coord t(nt.ndim());
      for (int d = 0; d < nt.ndim(); ++d) t[d] = lin % nt[d], lin /= nt[d];
      return t;
    };
    constexpr index_t kChunk = 4096;
    struct Pair { int value, rank; };  // MPI_2INT; -owner in the second half gives the largest owner
    std::vector<Pair> v;
    for (index_t lo = 0; lo < total; lo += kChunk) {
      const index_t n = std::min(kChunk, total - lo);
      v.assign(static_cast<size_t>(2 * n), {0, p.rank});
      for (index_t i = 0; i < n; ++i) {
        v[i].value = l.owner(tile_at(lo + i));
        v[n + i].value = -v[i].value;
      }
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(2 * n), MPI_2INT, MPI_MINLOC, p.comm),
                "MPI_Allreduce", p.comm);
      for (index_t i = 0; i < n; ++i) {
        if (v[i].value == -v[n + i].value) continue;
        detail::fail_mismatch("redist: ", s == 0 ? "source" : "target", " layout ", l.spec(),
                              ": the owners differ between ranks: tile ", tile_at(lo + i).str(), " is owned by rank ",
                              v[i].value, " according to rank ", v[i].rank, " and by rank ", -v[n + i].value,
                              " according to rank ", v[n + i].rank,
                              "; an owner function must give every tile the same owner on every rank");
      }
    }
    detail::fail_mismatch("redist: ", s == 0 ? "source" : "target", " layout ", l.spec(),
                          ": the owners differ between ranks (an owner function answers differently when called "
                          "again)");
  }
}

// make_plan's agreements, in one MPI_Allreduce (MPI_MAX over values and their
// complements) when all is well. In this order, the first that fails decides
// the error, the same on every rank: the lowest rank whose arguments are bad
// (`bad`), whether every rank passed the same layouts, regions and options
// (same_hash), the lowest rank whose storage maps failed (`index_error`), the
// owner of every tile for general ownerships (agree_owners), the lowest rank whose
// plan failed (`plan_error`). Only on an error do more collectives follow, to
// build its message (agree, agree_same_everywhere, agree_owners).
void agree_plan(const detail::PlanCore& p, std::span<const Region> regions, const Options& options,
                const std::string& bad, const std::string& index_error, const std::string& plan_error) {
  auto lowest = [&p](const std::string& e) { return e.empty() ? 0 : UINT64_MAX - static_cast<std::uint64_t>(p.rank); };
  const std::uint64_t same = bad.empty() ? same_hash(p.src, p.dst, regions, options) : 0;
  const bool general = !(p.src.ownership().per_dimension() && p.dst.ownership().per_dimension());
  const std::uint64_t hs = general && p.src_local ? p.src_local->owners_hash() : 0;
  const std::uint64_t hd = general && p.dst_local ? p.dst_local->owners_hash() : 0;
  std::uint64_t v[9] = {lowest(bad), same, ~same, lowest(index_error), hs, ~hs, hd, ~hd, lowest(plan_error)};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 9, MPI_UINT64_T, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
  if (v[0] != 0) agree(p.comm, bad);  // throws the lowest rank's message on every rank
  if (v[1] != ~v[2]) {
    agree_same_everywhere(p, p.src, p.dst, regions, options);  // throws, naming the item and both texts
    detail::fail_mismatch("redist: ranks passed different layouts, regions or options in a value their texts do not "
                          "show; every rank must pass the same");
  }
  if (v[3] != 0) agree(p.comm, index_error);
  if (v[4] != ~v[5] || v[6] != ~v[7]) {
    agree_owners(p);  // throws, naming the first tile whose owner differs
    detail::fail_mismatch("redist: the owners differ between ranks");
  }
  if (v[8] != 0) agree(p.comm, plan_error);
}

// execute's one agreement: the lowest rank with a bad argument, and whether every
// rank asked for the same strategy (different ones would pair different message
// schemes and hang), in a single MPI_Allreduce. `index`: registry index, or
// registry().size() for auto.
void agree_execute(const detail::PlanCore& p, const std::string& err, int index) {
  int v[3] = {err.empty() ? INT_MAX : p.rank, index, -index}, r[3];
  check_mpi(MPI_Allreduce(v, r, 3, MPI_INT, MPI_MIN, p.comm), "MPI_Allreduce", p.comm);
  if (r[0] != INT_MAX) agree(p.comm, err);  // taken on every rank; throws the lowest rank's error
  if (r[1] != -r[2]) {
    auto name = [](int k) {
      const auto& reg = detail::registry();
      return k >= 0 && k < static_cast<int>(reg.size()) ? std::string(reg[static_cast<size_t>(k)].name)
                                                          : std::string(kAuto);
    };
    detail::fail_mismatch("redist: ranks called execute with different strategies (", name(r[1]), " and ",
                          name(-r[2]), "); every rank must use the same one");
  }
}

// Held by the thread that runs one of a plan's collectives (execute,
// predictions). A second thread at the same time is refused at once, on its own
// rank and without communicating: two threads in one plan would share its
// buffers, requests and message order (wrong data, or a hang). Released however
// the call ends, so a plan that threw runs again.
class OneThread {
 public:
  explicit OneThread(PlanImpl& impl) : busy_(impl.busy) {
    if (busy_.exchange(true, std::memory_order_acquire))
      detail::fail("redist: rank ", impl.core.rank,
                   ": plan executed from two threads at once; a Plan is executed by one thread at a time: make one "
                   "plan per thread (this error is local to this rank, not agreed)");
  }
  ~OneThread() { busy_.store(false, std::memory_order_release); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  std::atomic<bool>& busy_;
};

// Collective: the machine model the plan keeps (Options::machine).
std::shared_ptr<const Machine> fix_machine(const detail::PlanCore& p, const Options& o) {
  if (o.machine) return o.machine;
  if (o.calibration.empty() && o.strategy != kAuto && !o.model) return nullptr;
  return std::make_shared<const Machine>(machine_for(p.comm, o.calibration));  // throws for a bad file
}

// Collective (make_plan, with a memory budget): every strategy's extra memory, max
// over ranks (the same vector everywhere). Fails on every rank when
// options.strategy does not fit, naming the smallest budget that works for it and
// the strategies that fit; for auto, when none does.
std::vector<index_t> agree_budget(detail::PlanCore& p, const Options& o) {
  const auto& reg = detail::registry();
  std::vector<index_t> x;
  for (const detail::StrategyEntry& e : reg)  // extra_plan is collective: same order everywhere
    x.push_back(e.extra_plan ? e.extra_plan(p) : extra_memory(p.rp, e.name, o));
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(x.size()), MPI_INT64_T, MPI_MAX, p.comm),
            "MPI_Allreduce", p.comm);
  // Under Options::arithmetic only the strategies that apply it count: auto would
  // otherwise find alltoallw within the budget, then run p2p beyond it.
  const bool arith = !o.arithmetic.identity();
  const auto usable = [&](size_t i) { return !arith || reg[i].arithmetic; };
  size_t best = reg.size();
  std::string fit;
  for (size_t i = 0; i < reg.size(); ++i) {
    if (!usable(i)) continue;
    if (best == reg.size() || x[i] < x[best]) best = i;
    if (x[i] <= o.max_buffer_bytes) fit += detail::cat(fit.empty() ? "" : ", ", reg[i].name);
  }
  const bool is_auto = o.strategy == kAuto;
  const index_t need = is_auto ? x[best] : x[static_cast<size_t>(detail::find_strategy(o.strategy))];
  if (need <= o.max_buffer_bytes) return x;
  const std::string what =
      is_auto ? std::string(arith ? "every strategy that applies options.arithmetic (auto)" : "every strategy (auto)")
              : detail::cat("strategy ", o.strategy, " (it needs ", need, " bytes on the busiest rank)");
  detail::fail("redist: options.max_buffer_bytes = ", o.max_buffer_bytes, " is too small for ", what,
               x[best] == 0 ? detail::cat("; strategy ", reg[best].name, " needs no buffer at all (any budget)")
                            : detail::cat("; the smallest budget that works is ", x[best], " (strategy ", reg[best].name, ")"),
               fit.empty() ? "" : "; within this budget: ", fit);
  return x;
}

}  // namespace

std::byte* detail::PlanCore::scratch(std::unique_ptr<std::byte[]>& buf, index_t& have, index_t bytes) {
  if (bytes > have) {
    buf.reset();  // the smaller one goes first: the plan never holds both
    buffer_bytes -= have;
    have = 0;
    allocated(bytes);
    buf.reset(new std::byte[static_cast<size_t>(bytes)]);
    have = bytes;
  }
  return buf.get();
}

const std::vector<int>& detail::PlanCore::node_of() {
  if (node_of_.empty()) node_of_ = node_leaders(comm, options.node_size);
  return node_of_;
}

// The one-message buffers are dropped when a packed buffer is made or grows (no
// strategy keeps data in them between runs), and round_send drops packed buffers
// that are not whole, so that the plan never holds both: its peak is the larger,
// which a memory budget bounds.
void detail::PlanCore::allocated(index_t bytes) {
  if (round_) {
    round_.reset();
    buffer_bytes = send_bytes_ + recv_bytes_;
  }
  buffer_bytes += bytes;
  buffer_peak = std::max(buffer_peak, buffer_bytes);
}

std::byte* detail::PlanCore::round_send(index_t largest_send, index_t largest_recv) {
  const bool whole = send_bytes_ >= rp.stats.bytes_sent && recv_bytes_ >= rp.stats.bytes_received;
  if (whole) return send_.get();
  const index_t piece = budget_piece(options.max_buffer_bytes, rp.elem_size);
  round_send_bytes_ = std::min(piece, largest_send);
  const index_t bytes = round_send_bytes_ + std::min(piece, largest_recv);
  if (!round_ && bytes > 0) {
    // Packed buffers smaller than the whole volume (p2p's, p2p_pipelined's slots)
    // go first, as round_ goes before a larger one: the plan never holds both, so
    // its peak is the larger, which a memory budget bounds.
    send_.reset(), recv_.reset();
    buffer_bytes -= send_bytes_ + recv_bytes_;
    send_bytes_ = recv_bytes_ = 0;
    round_.reset(new std::byte[static_cast<size_t>(bytes)]);
    buffer_bytes += bytes;
    buffer_peak = std::max(buffer_peak, buffer_bytes);
  }
  return round_.get();
}

std::byte* detail::PlanCore::round_recv(index_t largest_send, index_t largest_recv) {
  round_send(largest_send, largest_recv);
  return round_ ? round_.get() + round_send_bytes_ : recv_.get();
}

detail::Strategy& PlanImpl::state(int i) {
  const auto& reg = detail::registry();
  if (runs_as[static_cast<size_t>(i)] < 0) {
    auto st = reg[static_cast<size_t>(i)].make(core);
    // Collective probe: every rank called execute with this strategy (agreed).
    if (st->available()) {
      states[static_cast<size_t>(i)] = std::move(st);
      runs_as[static_cast<size_t>(i)] = i;
    } else {
      const int f = detail::find_strategy(reg[static_cast<size_t>(i)].fallback);
      REDIST_ASSERT(f >= 0 && f != i, "strategy ", reg[static_cast<size_t>(i)].name, " is not available and has no fallback");
      runs_as[static_cast<size_t>(i)] = f;
      return state(f);
    }
  }
  const int r = runs_as[static_cast<size_t>(i)];
  if (r != i) return state(r);
  return *states[static_cast<size_t>(i)];
}

Plan make_plan(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
               const Options& options) {
  return make_plan(src, dst, std::span<const Region>(&region, 1), comm, options);
}

Plan make_plan(const Layout& src, const Layout& dst, std::span<const Region> regions, MPI_Comm comm,
               const Options& options) {
  auto impl = std::make_unique<PlanImpl>();
  detail::PlanCore& p = impl->core;
  if (comm == MPI_COMM_NULL) throw Error("redist: make_plan needs a communicator, got MPI_COMM_NULL");
  // Outside MPI, Open MPI's first call below aborted the job.
  if (std::string e = detail::outside_mpi("make_plan"); !e.empty()) throw Error(e);
  if (std::string e = detail::intercomm_problem(comm, "redist: make_plan"); !e.empty()) throw Error(e);
  // Own communicator: private tag space, errors returned instead of aborting
  // (or the caller's, Options::duplicate_comm).
  p.owns_comm = options.duplicate_comm;
  if (p.owns_comm) check_mpi(MPI_Comm_dup(comm, &p.comm), "MPI_Comm_dup", comm);
  else p.comm = comm;
  check_mpi(MPI_Comm_set_errhandler(p.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", comm);
  check_mpi(MPI_Comm_rank(p.comm, &p.rank), "MPI_Comm_rank", p.comm);
  check_mpi(MPI_Comm_size(p.comm, &p.size), "MPI_Comm_size", p.comm);
  p.src = src, p.dst = dst, p.options = options;
  p.regions.assign(regions.begin(), regions.end());
  // One region: it; none: an empty one; several: the first (Plan::region).
  p.region = regions.empty() ? Region{Coord(src.ndim()), Coord(src.ndim()), Coord(src.ndim())} : regions[0];

  std::string err = local_checks(src, dst, p.regions, p.size);
  if (err.empty() && options.max_message_bytes < 1)
    err = detail::cat("options.max_message_bytes must be >= 1, got ", options.max_message_bytes);
  if (err.empty() && options.node_size < 0)
    err = detail::cat("options.node_size must be >= 0 (0: the whole node), got ", options.node_size);
  if (err.empty() && options.auto_trials < 0)
    err = detail::cat("options.auto_trials must be >= 0 (0: auto follows the model alone), got ",
                      options.auto_trials);
  if (err.empty() && options.executions < 0)
    err = detail::cat("options.executions must be >= 0 (0: unknown, keep every strategy's state), got ",
                      options.executions);
  if (err.empty()) p.copy = detail::copy_threads_from(options.copy_threads, err);
  if (err.empty() && options.max_buffer_bytes < 0)
    err = detail::cat("options.max_buffer_bytes must be >= 0 (0: no budget), got ", options.max_buffer_bytes);
  if (err.empty() && options.taskgraph.threads < 1)
    err = detail::cat("options.taskgraph.threads must be >= 1, got ", options.taskgraph.threads);
  if (err.empty() && options.taskgraph.batch < TaskgraphOptions::kBatchAuto)
    err = detail::cat("options.taskgraph.batch must be >= 0 (columns) or -1 (auto), got ", options.taskgraph.batch);
  if (err.empty() && (options.taskgraph.grain == 0 || options.taskgraph.grain < TaskgraphOptions::kGrainAuto))
    err = detail::cat("options.taskgraph.grain must be >= 1 (target tiles per task) or -1 (auto), got ",
                      options.taskgraph.grain);
  if (err.empty() && options.taskgraph.eager_limit < 0)
    err = detail::cat("options.taskgraph.eager_limit must be >= 0, got ", options.taskgraph.eager_limit);
  if (err.empty()) try {
      check_strategy(options.strategy);
    } catch (const Error& e) {
      err = detail::cat("options.strategy: ", e.what());
    }
  if (err.empty()) {
    err = options.arithmetic.check(src.elem_size());
    if (!err.empty()) err = "options.arithmetic: " + err;
  }
  if (err.empty()) err = arithmetic_refused(options.strategy, options.arithmetic);

  // This rank's storage maps (they call owner functions), then its plan, from
  // its own arguments when they are valid: any exception, a user callback's
  // included, is agreed on like a bad argument. All in one agreement (agree_plan):
  // a rank plans before it knows that every rank passed the same arguments, and
  // every rank then throws the same error when they did not.
  std::string index_error, plan_error;
  if (err.empty()) {
    index_error = catch_error([&] {
      p.src_local = std::make_unique<LocalIndex>(local_index(p.src, p.rank, "source"));
      p.dst_local = std::make_unique<LocalIndex>(local_index(p.dst, p.rank, "target"));
    });
    if (index_error.empty())
      plan_error = catch_error([&] { p.rp = plan_rank(p.src, p.dst, *p.src_local, *p.dst_local, p.regions, p.rank, p.size); });
  }
  agree_plan(p, p.regions, options, err, index_error, plan_error);
  for (auto [peers, off] : {std::pair{&p.rp.sends, &p.send_offset}, std::pair{&p.rp.receives, &p.recv_offset}}) {
    off->assign(peers->size() + 1, 0);
    for (size_t i = 0; i < peers->size(); ++i) (*off)[i + 1] = (*off)[i] + (*peers)[i].bytes;
  }
  const size_t n = detail::registry().size();
  impl->states.resize(n);
  impl->runs_as.assign(n, -1);
  if (options.max_buffer_bytes > 0) impl->extra_max = agree_budget(p, options);
  const double t0 = MPI_Wtime();
  impl->machine = fix_machine(p, options);  // collective; the same outcome on every rank
  p.model_seconds = MPI_Wtime() - t0;
  return Plan(std::move(impl));
}

void detail::PlanAccess::set_groups(Plan& plan, std::vector<int> senders, std::vector<int> receivers,
                                     index_t max_buffer_bytes) {
  PlanImpl& impl = *plan.impl_;
  impl.core.senders = std::move(senders);
  impl.core.receivers = std::move(receivers);
  impl.core.options.max_buffer_bytes = max_buffer_bytes;
  if (max_buffer_bytes > 0) impl.extra_max = agree_budget(impl.core, impl.core.options);
}

detail::PlanCore& detail::PlanAccess::core(const Plan& plan) {
  if (!plan.impl_) throw Error("redist: an empty Plan (use make_plan)");
  return plan.impl_->core;
}

Plan::Plan() = default;
Plan::Plan(std::unique_ptr<PlanImpl> impl) : impl_(std::move(impl)) {}
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
Plan::~Plan() = default;

// The plan's insides, or the error of an empty Plan (default-made, moved from, or
// a rank in neither group of make_group_plan) naming what was asked of it.
PlanImpl& Plan::impl(const char* what) const {
  if (!impl_) throw Error(detail::cat("redist: ", what, " of an empty Plan (use make_plan; Plan::empty() tells)"));
  return *impl_;
}
// The same for what communicates: MPI must still be running.
PlanImpl& Plan::running(const char* what) const {
  PlanImpl& i = impl(what);
  if (std::string e = detail::outside_mpi(what); !e.empty()) throw Error(e);
  return i;
}

const RankPlan& Plan::rank_plan() const { return impl("rank_plan").core.rp; }
const PlanStats& Plan::stats() const { return impl("stats").core.rp.stats; }
const Layout& Plan::source() const { return impl("source").core.src; }
const Layout& Plan::target() const { return impl("target").core.dst; }
const Region& Plan::region() const { return impl("region").core.region; }
const std::vector<Region>& Plan::regions() const { return impl("regions").core.regions; }
const Options& Plan::options() const { return impl("options").core.options; }
MPI_Comm Plan::comm() const { return impl_ ? impl_->core.comm : MPI_COMM_NULL; }
const Machine* Plan::machine() const { return impl("machine").machine.get(); }
const std::string& Plan::auto_choice() const { return impl("auto_choice").auto_choice; }
std::vector<Plan::AutoTrial> Plan::auto_trial_runs() const {
  const PlanImpl& i = impl("auto_trial_runs");
  std::vector<AutoTrial> out;
  for (auto [k, seconds] : i.trial_log)
    out.push_back({std::string(detail::registry()[static_cast<size_t>(i.trial_candidates[k])].name), seconds});
  return out;
}
int Plan::tuning_executes(const std::string& strategy) const {
  const PlanImpl& p = impl("tuning_executes");
  int i = detail::find_strategy(strategy == "auto" ? p.auto_choice : strategy);
  if (i < 0) return 0;
  if (p.runs_as[static_cast<size_t>(i)] >= 0) i = p.runs_as[static_cast<size_t>(i)];
  const detail::StrategyEntry& e = detail::registry()[static_cast<size_t>(i)];
  return e.tuning ? e.tuning() : 0;
}

std::string Plan::describe(const std::string& strategy) const {
  const PlanImpl& p = impl("describe");
  const int i = detail::find_strategy(strategy);
  if (i < 0 || p.runs_as[static_cast<size_t>(i)] < 0) return {};
  const int r = p.runs_as[static_cast<size_t>(i)];
  return p.states[static_cast<size_t>(r)] ? p.states[static_cast<size_t>(r)]->describe() : std::string();
}
index_t Plan::buffer_bytes() const { return impl("buffer_bytes").core.buffer_peak; }
index_t Plan::held_bytes() const { return impl("held_bytes").core.buffer_bytes; }
index_t Plan::extra_bytes(std::string_view strategy) const {
  const PlanImpl& i = impl("extra_bytes");
  const int k = detail::find_strategy(strategy);
  if (k < 0) {
    check_strategy(strategy);  // throws, naming the allowed ones
    detail::fail("redist: extra_bytes: auto runs another strategy: name the strategy");
  }
  return i.extra_max.empty() ? -1 : i.extra_max[static_cast<size_t>(k)];
}

std::vector<double> Plan::predictions() const {
  OneThread one(running("predictions"));
  return impl_->predictions();
}
std::vector<double> Plan::predictions(std::span<const void* const> src_blocks) const {
  OneThread one(running("predictions"));
  return impl_->predictions(src_blocks);
}

std::vector<double> Plan::predictions_for(std::string_view storage) const {
  OneThread one(running("predictions"));
  std::string err;
  if (storage != "heap" && storage != "shared")
    err = detail::cat("predictions: storage '", storage, "': expected heap or shared");
  agree(impl_->core.comm, err);
  // heap on some ranks and shared on others would mix two models in one max
  detail::agree_same(impl_->core.comm, {{"predictions: storage differs", std::string(storage)}},
                     "every rank must ask for the same");
  return impl_->predictions({}, storage == "heap");
}

// How a plan gets its machine model, naming which front end has which option
// (C: strategy and calibration; Python: also machine; C++: also model).
constexpr const char* kMakeWithModel =
    "make the plan with strategy \"auto\" or a calibration file (calibration; C, C++, Python), a machine model "
    "(machine; C++, Python), or model = true (C++: the default calibration file, else a quick measurement)";

std::vector<double> PlanImpl::predictions(std::span<const void* const> src_blocks, bool heap) {
  std::string err;
  if (!machine)
    err = detail::cat("this plan has no machine model: ", kMakeWithModel);
  agree(core.comm, err);
  std::vector<double> t;
  const auto& reg = detail::registry();
  // The plan's nodes (collective, found once) for the models that depend on them.
  const bool nodes = std::any_of(reg.begin(), reg.end(), [](const auto& e) { return e.predict_nodes != nullptr; });
  const std::span<const int> node_of = nodes ? std::span<const int>(core.node_of()) : std::span<const int>();
  for (const detail::StrategyEntry& e : reg)  // predict_plan is collective: same order everywhere
    t.push_back((e.predict_plan    ? e.predict_plan(core, *machine)
                 : e.predict_nodes ? e.predict_nodes(core.rp, *machine, false, node_of)
                 : core.options.max_buffer_bytes > 0 && e.predict_budget
                     ? e.predict_budget(core.rp, *machine, core.options.max_buffer_bytes)
                     : e.predict(core.rp, *machine))
                    .total());
  if (heap || src_blocks.size() == static_cast<size_t>(core.src_local->nblocks()))
    for (size_t i = 0; i < reg.size(); ++i)
      if (reg[i].suits && (heap || !reg[i].suits(core, detail::SrcBlocks{src_blocks})))
        t[i] = predict(core.rp, reg[i].name, *machine, /*heap=*/true, node_of).total();  // its heap model, or infinity
  // Paper 000 Eq. 2: the slowest rank decides; MAX makes the vector identical on every rank.
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, core.comm),
            "MPI_Allreduce", core.comm);
  // What the plan's options rule out cannot run: the memory budget (extra_max,
  // agreed when the plan was made) and the arithmetic (only the strategies that
  // unpack apply it). Infinity, as auto must not pick them.
  for (size_t i = 0; i < extra_max.size(); ++i)
    if (extra_max[i] > core.options.max_buffer_bytes) t[i] = std::numeric_limits<double>::infinity();
  if (!core.options.arithmetic.identity())
    for (size_t i = 0; i < reg.size(); ++i)
      if (!reg[i].arithmetic) t[i] = std::numeric_limits<double>::infinity();
  return t;
}

void Plan::execute(const void* src, void* dst, std::string_view strategy) {
  const void* s[1] = {src};
  void* d[1] = {dst};
  execute(std::span<const void* const>(s, 1), std::span<void* const>(d, 1), strategy);
}

void Plan::execute_sized(const void* src, index_t src_bytes, void* dst, index_t dst_bytes, index_t elem_size,
                         std::string_view strategy) {
  OneThread one(running("execute"));
  const detail::PlanCore& p = impl_->core;
  std::string err;
  if (elem_size != p.src.elem_size())
    err = detail::cat("execute: the spans hold elements of ", elem_size, " bytes, the layouts esize=", p.src.elem_size());
  else if (src_bytes < p.src_local->elements() * elem_size || dst_bytes < p.dst_local->elements() * elem_size)
    err = detail::cat("execute: this rank stores ", p.src_local->elements(), " source and ", p.dst_local->elements(),
                      " target elements; the spans hold ", src_bytes / elem_size, " and ", dst_bytes / elem_size);
  agree(p.comm, err);
  const void* s[1] = {src};
  void* d[1] = {dst};
  impl_->execute(std::span<const void* const>(s, 1), std::span<void* const>(d, 1), strategy);
}

void Plan::execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
                   std::string_view strategy) {
  OneThread one(running("execute"));
  impl_->execute(src_blocks, dst_blocks, strategy);
}

void Plan::execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
                   std::string_view strategy, std::string_view caller_error) {
  OneThread one(running("execute"));
  impl_->execute(src_blocks, dst_blocks, strategy, caller_error);
}

void PlanImpl::execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
                       std::string_view strategy, std::string_view caller_error) {
  // After an MPI error the plan's requests, buffers and communicator are in an
  // unknown state: it never communicates again (local, like the error itself).
  if (!failed.empty())
    throw MpiError(failed + " [an earlier execute of this plan; a plan that had an MPI error cannot run again]",
                   MPI_ERR_OTHER);
  detail::PlanCore& p = core;
  if (strategy.empty()) strategy = p.options.strategy;
  std::string err(caller_error);  // a front end's own finding comes first
  check_side("source", src_blocks.size(), *p.src_local, p.src, src_blocks.data(), err);
  check_side("target", dst_blocks.size(), *p.dst_local, p.dst, const_cast<const void* const*>(dst_blocks.data()), err);
  if (err.empty()) err = overlap_check(p, src_blocks, dst_blocks);
  const auto& reg = detail::registry();
  int index = strategy == kAuto ? static_cast<int>(reg.size()) : detail::find_strategy(strategy);
  if (err.empty() && index < 0) try {
      check_strategy(strategy);
    } catch (const Error& e) {
      err = e.what();
    }
  if (err.empty() && !extra_max.empty() && index >= 0 && index < static_cast<int>(reg.size()) &&
      extra_max[static_cast<size_t>(index)] > p.options.max_buffer_bytes)
    err = detail::cat("strategy ", strategy, " needs ", extra_max[static_cast<size_t>(index)],
                      " bytes of buffers on the busiest rank, over the plan's options.max_buffer_bytes = ",
                      p.options.max_buffer_bytes);
  if (err.empty() && index >= 0) err = arithmetic_refused(strategy, p.options.arithmetic);
  if (err.empty() && strategy == kAuto && !machine)
    err = detail::cat("strategy auto needs the machine model, fixed when the plan is made: ", kMakeWithModel);
  try {
    agree_execute(p, err, index);  // nothing has moved yet: the target is untouched on error
    int trial = -1;  // which candidate an auto trial runs
    if (strategy == kAuto) {
      // Collective once per plan (every rank asked for auto, checked above): the same
      // machine figures everywhere, predictions reduced with MPI_MAX.
      if (auto_choice.empty() && trial_candidates.empty()) {
        // Over the budget or without the arithmetic: infinity (some strategy fits: make_plan).
        const std::vector<double> t = predictions(src_blocks);
        std::vector<int> order(reg.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return t[a] < t[b]; });
        if (p.options.auto_trials > 0 && order.size() > 1 && std::isfinite(t[static_cast<size_t>(order[1])]))
          trial_candidates = {order[0], order[1]};
        else
          auto_choice = reg[static_cast<size_t>(order[0])].name;
      }
      if (auto_choice.empty())  // a trial (Options::auto_trials): the two candidates in turn
        index = trial_candidates[trial = (trial_times[0].size() + trial_times[1].size()) % 2];
      else
        index = detail::find_strategy(auto_choice);
    }
    // Under a budget the plan holds what one strategy needs at a time: where this
    // one would not fit beside what the others keep (the forwarding strategies'
    // slots, the packed buffers) on the busiest rank, every state and buffer goes
    // first. Decided alike on every rank (what is held differs per rank), as the
    // states made again set up collectively.
    if (!extra_max.empty() && index != last_run) {
      index_t held = p.buffer_bytes;
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_MAX, p.comm), "MPI_Allreduce", p.comm);
      if (held > 0 && held + extra_max[static_cast<size_t>(index)] > p.options.max_buffer_bytes) drop_state();
    }
    last_run = index;
    const double t0 = trial >= 0 ? MPI_Wtime() : 0;
    state(index).run(detail::SrcBlocks{src_blocks}, detail::DstBlocks{dst_blocks});
    if (trial >= 0) end_trial(trial, MPI_Wtime() - t0);
    if (p.options.executions > 0 && ++executed == p.options.executions) executed = 0, drop_state();
  } catch (const MpiError& e) {
    failed = e.what();
    throw;
  }
}

}  // namespace redist
