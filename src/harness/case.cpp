#include "harness/case.hpp"

#include "redist/groups.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdint>

#include <unistd.h>

#include "exec/strategy.hpp"
#include "harness/pattern.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::harness {

using detail::check_mpi;

GlobalStats global_stats(const PlanStats& st, MPI_Comm comm) {
  static_assert(sizeof(index_t) == sizeof(std::int64_t));
  std::int64_t mx[6] = {std::max(st.bytes_sent, st.bytes_received), st.bytes_local,
                        st.messages_sent ? st.bytes_sent / st.messages_sent : 0, st.max_segments_per_tile,
                        st.plan_bytes, st.bytes_received + st.bytes_local};
  std::int64_t sum[5] = {st.bytes_sent, st.bytes_local, st.messages_sent, st.segments_sent,
                         st.runs_sent + st.local_runs};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, mx, 6, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce", comm);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sum, 5, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce", comm);
  GlobalStats g;
  g.max_remote_bytes = mx[0], g.max_local_bytes = mx[1], g.max_message_bytes = mx[2];
  g.max_segments_per_tile = mx[3], g.max_plan_bytes = mx[4], g.max_written_bytes = mx[5];
  g.total_remote_bytes = sum[0], g.total_local_bytes = sum[1], g.messages = sum[2], g.segments = sum[3];
  g.runs = sum[4];
  return g;
}

Limits limits(const GlobalStats& g, const Machine& m) {
  Limits l;
  // Without messages Bnet is read at 1 MiB, where the curve has flattened.
  l.message_bytes = g.max_message_bytes ? g.max_message_bytes : index_t{1} << 20;
  l.bnet = m.net_bandwidth(static_cast<double>(l.message_bytes));
  l.bmemcpy = m.bmemcpy;
  l.bound = g.max_remote_bytes ? bound_bandwidth(m, g.max_remote_bytes, g.max_local_bytes, l.message_bytes) : 0;
  const double rate = m.bmemcpy_node > 0 ? m.bmemcpy_node : m.bmemcpy;
  l.single_copy = rate > 0 ? static_cast<double>(g.max_written_bytes) / rate : 0;
  return l;
}

Verdict verify(const Plan& plan, const LocalStorage& src, const LocalStorage& dst, const std::string& what) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(plan.comm(), &rank), "MPI_Comm_rank", plan.comm());
  const Arithmetic& a = plan.options().arithmetic;
  const CheckResult c = check_redistributed(plan.target(), rank, dst.blocks(), plan.region(), plan.source(),
                                            kSourcePattern, kTargetPattern, a);
  const CheckResult s = check_pattern(plan.source(), rank, src.blocks(), kSourcePattern, a.type);
  if (!c.ok()) std::fprintf(stderr, "redist: rank %d: %s: wrong: %s\n", rank, what.c_str(), c.first_error.c_str());
  if (!s.ok())
    std::fprintf(stderr, "redist: rank %d: %s: the source changed: %s\n", rank, what.c_str(), s.first_error.c_str());
  std::int64_t v[2] = {c.wrong + s.wrong, c.checked};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_SUM, plan.comm()), "MPI_Allreduce", plan.comm());
  return {v[1], v[0]};
}

const MethodResult* CaseResult::find(const std::string& n) const {
  for (const MethodResult& m : methods)
    if (m.name == n) return &m;
  return nullptr;
}
double CaseResult::bandwidth(const MethodResult& m) const {
  return achieved_bandwidth(stats.max_remote_bytes, m.median);
}
double CaseResult::ratio_to_bound(const MethodResult& m) const {
  return limits.bound > 0 ? bandwidth(m) / limits.bound : 0;
}
double CaseResult::times_single_copy(const MethodResult& m) const {
  return limits.single_copy > 0 ? m.median / limits.single_copy : 0;
}
double CaseResult::speedup(const MethodResult& m) const {
  const MethodResult* p = find("pdgemr2d");
  if (!p) p = find("pdtran");  // ScaLAPACK's peer of a transposing region (the `tran` suite)
  return p && m.median > 0 ? p->median / m.median : 0;
}
bool CaseResult::ok() const {
  return std::all_of(methods.begin(), methods.end(), [](const MethodResult& m) { return m.verified.value_or(true); });
}

CaseRun::CaseRun(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm, const Options& options) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank", comm);
  check_mpi(MPI_Barrier(comm), "MPI_Barrier", comm);
  const double t0 = MPI_Wtime();
  plan_ = make_plan(src, dst, region, comm, options);  // collective validation, before any allocation
  double t = MPI_Wtime() - t0 - detail::PlanAccess::core(plan_).model_seconds;  // planning alone
  check_mpi(MPI_Allreduce(&t, &plan_seconds_, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce", comm);
  stats_ = global_stats(plan_.stats(), comm);
  allocate(src, dst, comm);
  fill_pattern(src, rank_, src_.blocks(), kSourcePattern, options.arithmetic.type);
}

std::unique_ptr<CaseRun> group_case_run(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
                                        int senders, bool overlap, const Options& options) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  const bool send = rank < senders, receive = overlap || rank >= senders;
  MPI_Comm sc = MPI_COMM_NULL, rc = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm, send ? 0 : MPI_UNDEFINED, rank, &sc), "MPI_Comm_split", comm);
  check_mpi(MPI_Comm_split(comm, receive ? 0 : MPI_UNDEFINED, rank, &rc), "MPI_Comm_split", comm);
  struct Free {
    MPI_Comm *a, *b;
    ~Free() {  // unchecked: cleanup, also on the error path
      if (*a != MPI_COMM_NULL) MPI_Comm_free(a);  // unchecked (above)
      if (*b != MPI_COMM_NULL) MPI_Comm_free(b);  // unchecked (above)
    }
  } free_groups{&sc, &rc};
  GroupLayouts gl;
  if (send) gl.send = src;
  if (receive) gl.receive = dst;
  gl.region = region;
  return std::make_unique<CaseRun>(
      [&] { return make_group_plan({.parent = comm, .senders = sc, .receivers = rc}, gl, options); }, comm);
}

CaseRun::CaseRun(const std::function<Plan()>& make, MPI_Comm comm) {
  check_mpi(MPI_Barrier(comm), "MPI_Barrier", comm);
  const double t0 = MPI_Wtime();
  plan_ = make();
  double t = MPI_Wtime() - t0 - detail::PlanAccess::core(plan_).model_seconds;  // planning alone
  check_mpi(MPI_Allreduce(&t, &plan_seconds_, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce", comm);
  if (plan_.comm() == MPI_COMM_NULL) detail::fail("redist: CaseRun: every rank of the communicator must be in the plan");
  check_mpi(MPI_Comm_rank(plan_.comm(), &rank_), "MPI_Comm_rank", plan_.comm());
  stats_ = global_stats(plan_.stats(), plan_.comm());
  allocate(plan_.source(), plan_.target(), plan_.comm());
  fill_pattern(plan_.source(), rank_, src_.blocks(), kSourcePattern);
}

double node_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

JobMemory job_memory(MPI_Comm comm) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type", comm);
  int node_rank = 0;
  check_mpi(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank", comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", comm);
  const int leader = node_rank == 0;
  JobMemory m;
  check_mpi(MPI_Allreduce(&leader, &m.nodes, 1, MPI_INT, MPI_SUM, comm), "MPI_Allreduce", comm);
  m.bytes = node_memory_bytes() * m.nodes;
  return m;
}

namespace {

std::string gib(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", bytes / (1 << 30));
  return s;
}

}  // namespace

// Collective. The storage is zeroed when allocated (every page touched): with
// overcommit, an allocation beyond the node's memory may succeed and the zeroing
// be killed, so the bytes needed by the ranks of each node are compared with its
// memory first; std::bad_alloc is caught too. Either way every rank gets the same
// error, which says what a rank needs.
void CaseRun::allocate(const Layout& src, const Layout& dst, MPI_Comm comm) {
  const LocalIndex src_map(src, rank_), dst_map(dst, rank_);
  const index_t src_bytes = checked_mul(src_map.elements(), src.elem_size(), "source storage bytes");
  const index_t dst_bytes = checked_mul(dst_map.elements(), dst.elem_size(), "target storage bytes");
  const index_t need = checked_add(src_bytes, dst_bytes, "storage bytes");
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type", comm);
  double mine = static_cast<double>(need), on_node = 0;  // a double: the sum cannot wrap
  int node_ranks = 1;
  check_mpi(MPI_Allreduce(&mine, &on_node, 1, MPI_DOUBLE, MPI_SUM, node), "MPI_Allreduce", comm);
  check_mpi(MPI_Comm_size(node, &node_ranks), "MPI_Comm_size", comm);
  check_mpi(MPI_Comm_free(&node), "MPI_Comm_free", comm);
  const double memory = node_memory_bytes();
  const std::string needs = detail::cat("this case needs ", gib(mine), " of storage on rank ", rank_, " (source ",
                                        gib(static_cast<double>(src_bytes)), " + target ",
                                        gib(static_cast<double>(dst_bytes)), ")");
  std::string err;
  bool shared = false;
  try {
    shared = shared_storage_requested();
  } catch (const Error& e) {
    err = e.what();
  }
  if (err.empty() && on_node > memory)
    err = detail::cat("not enough memory: ", needs, "; the ", node_ranks, " ranks on its node need ", gib(on_node),
                      " in all, the node has ", gib(memory));
  if (shared) {  // collective: every rank allocates, or none
    detail::agree(comm, err);
    src_ = LocalStorage(src, src_map, comm);
    dst_ = LocalStorage(dst, dst_map, comm);
    return;
  }
  if (err.empty()) try {
      src_ = LocalStorage(src, src_map);
      dst_ = LocalStorage(dst, dst_map);
    } catch (const std::bad_alloc&) {
      src_ = {}, dst_ = {};
      err = detail::cat("cannot allocate the storage: ", needs, " and the allocation failed");
    }
  detail::agree(comm, err);
}

void CaseRun::add_strategy(const std::string& name) {
  check_strategy(name);
  entries_.push_back({{name, [this, name] { plan_.execute(src_.const_blocks(), dst_.blocks(), name); }, {}}, true, true});
}

void CaseRun::add_method(const std::string& name, std::function<void()> run, bool verify) {
  entries_.push_back({{name, std::move(run), {}}, false, verify});
}

void CaseRun::add_single_copy() {
  const PlanStats& st = plan_.stats();
  const index_t bytes = st.bytes_received + st.bytes_local;
  std::string err;
  try {
    copy_from_.assign(static_cast<size_t>(bytes), std::byte{1});  // every page touched
    copy_to_.assign(static_cast<size_t>(bytes), std::byte{0});
  } catch (const std::bad_alloc&) {
    copy_from_ = {}, copy_to_ = {};
    err = detail::cat("cannot allocate the single-copy reference: two buffers of ", bytes, " bytes on rank ", rank_);
  }
  detail::agree(plan_.comm(), err);
  add_method(kSingleCopy, [this] {
    if (copy_to_.empty()) return;
    detail::copy_row(copy_to_.data(), copy_from_.data(), copy_to_.size(), true);
    detail::stream_fence();
  }, false);
}

CaseResult CaseRun::measure(const MeasureOptions& o) {
  // Checked and compared across ranks first: another count of repetitions or of
  // verifications on one rank would leave the others waiting in a collective.
  std::string err;
  if (o.reps < 1) err = detail::cat("measure: reps=", o.reps, " must be >= 1 (timed repetitions per method)");
  else if (o.warmup < 0) err = detail::cat("measure: warmup=", o.warmup, " must be >= 0");
  Watchdog* const wd = o.watchdog;
  // A step's name is built only when there is a watchdog to show it.
  auto step = [wd](auto&&... what) { return wd ? detail::cat(what...) : std::string(); };
  {
    Watchdog::Step s(wd, "agreement on the measure options");
    detail::agree(plan_.comm(), err);
    detail::agree_same(plan_.comm(),
                       {{"measure options differ", detail::cat("reps=", o.reps, " warmup=", o.warmup, " verify=",
                                                               o.verify, " inject_error=", o.inject_error)}},
                       "every rank must pass the same");
  }
  CaseResult res;
  res.src = plan_.source().spec();
  res.dst = plan_.target().spec();
  res.region = plan_.region().str();
  check_mpi(MPI_Comm_size(plan_.comm(), &res.ranks), "MPI_Comm_size", plan_.comm());
  res.plan_seconds = plan_seconds_;
  res.stats = stats_;
  // Options::auto_trials: auto's trial executes (the two candidates in turn, each
  // a real execute) run before the warm-up, so that auto's verified run and its
  // timed rounds run the strategy it keeps. auto_choice() is set on the same
  // execute on every rank (collectively), so every rank runs as many.
  std::vector<Plan::AutoTrial> trials;
  const int max_trials = 2 * plan_.options().auto_trials;
  for (Entry& e : entries_) {
    if (!e.strategy || e.method.name != kAuto) continue;
    for (int t = 0; t < max_trials && plan_.auto_choice().empty(); ++t) {
      Watchdog::Step s(wd, step("execute auto (trial ", t + 1, " of ", max_trials, ")"));
      e.method.run();
    }
    const std::vector<Plan::AutoTrial> runs = plan_.auto_trial_runs();
    std::vector<double> seconds;
    for (const Plan::AutoTrial& a : runs) seconds.push_back(a.seconds);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                            plan_.comm()),
              "MPI_Allreduce", plan_.comm());
    for (size_t k = 0; k < runs.size(); ++k) trials.push_back({runs[k].strategy, seconds[k]});
    break;
  }
  // The executes a strategy spends choosing how it runs (Plan::tuning_executes:
  // shm's slot stores) before its warm-up, so that its verified run and timed
  // rounds run what it chose. auto names the strategy it runs after its first
  // execute, which counts among them.
  for (Entry& e : entries_) {
    if (!e.strategy) continue;
    int done = 0;
    if (e.method.name == kAuto && plan_.auto_choice().empty()) {
      Watchdog::Step s(wd, step("execute auto (its choice)"));
      e.method.run();
      ++done;
    }
    const int tuning = plan_.tuning_executes(e.method.name);
    for (int t = done; t < tuning; ++t) {
      Watchdog::Step s(wd, step("execute ", e.method.name, " (tuning ", t + 1, " of ", tuning, ")"));
      e.method.run();
    }
  }
  // Warm-up (first touch, the plan's lazily made strategy states, auto's choice);
  // its first run is the verification, on a target refilled with its own pattern.
  bool first = true;
  for (Entry& e : entries_) {
    MethodResult r;
    r.name = e.method.name;
    if (e.strategy && r.name == kAuto) r.trials = trials;
    int runs = o.warmup;
    if (o.verify && e.verify) {
      fill_pattern(plan_.target(), rank_, dst_.blocks(), kTargetPattern, plan_.options().arithmetic.type);
      {
        Watchdog::Step s(wd, step("execute ", e.method.name, " (first run, verified)"));
        e.method.run();
      }
      if (o.inject_error && first && rank_ == 0 && dst_.bytes() >= 8)
        static_cast<unsigned char*>(dst_.data())[0] ^= 0x40;
      first = false;
      Watchdog::Step s(wd, step("verification of ", e.method.name));
      const Verdict v = verify(plan_, src_, dst_, e.method.name);
      r.verified = v.ok();
      r.checked = v.checked;
      r.wrong = v.wrong;
      --runs;
    }
    for (int w = 0; w < runs; ++w) {
      Watchdog::Step s(wd, step("execute ", e.method.name, " (warm-up ", w + 1, " of ", runs, ")"));
      e.method.run();
    }
    res.methods.push_back(std::move(r));
  }
  std::vector<Method> methods;
  for (Entry& e : entries_) methods.push_back(e.method);
  time_interleaved(methods, o.reps, plan_.comm(), o.after_round, wd);

  // The model's view (max over ranks) beside what was measured.
  std::vector<double> predicted;
  const std::vector<std::string> names = strategy_names();
  if (plan_.machine()) {
    Watchdog::Step s(wd, "predictions (cost model)");
    predicted = plan_.predictions(src_.const_blocks());
    res.limits = limits(stats_, *plan_.machine());
    res.model_choice = names[static_cast<size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin())];
  }
  for (size_t i = 0; i < methods.size(); ++i) {
    MethodResult& r = res.methods[i];
    r.median = methods[i].median();
    r.min = methods[i].min();
    r.times = std::move(methods[i].times);
    if (r.name == kSingleCopy) res.limits.single_copy = r.median, res.limits.single_copy_measured = true;
    if (!entries_[i].strategy) continue;
    if (r.name == kAuto) r.chose = plan_.auto_choice();
    const std::string& ran = r.name == kAuto ? r.chose : r.name;
    for (size_t k = 0; k < names.size() && !predicted.empty(); ++k)
      if (names[k] == ran) r.predicted = predicted[k];
  }
  return res;
}

}  // namespace redist::harness
