// redist-bench SUITE (`redist bench SUITE`): every redist strategy, auto and
// ScaLAPACK's pdgemr2d on the cases of paper 000 sec. 8 and paper 001 sec. 3.3,
// on the one case harness (src/harness/case.hpp): verified, timed interleaved,
// results.json in the harness's schema (docs/results.md), results.csv, and PNG
// plots when matplotlib is there (docs/benchmarks.md).
#include <mpi.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exec/relay.hpp"
#include "harness/case.hpp"
#include "harness/launch.hpp"
#include "harness/results.hpp"
#include "paper001.hpp"
#include "redist/redist.hpp"
#include "report.hpp"
#include "scalapack.hpp"
#include "suites.hpp"

using namespace redist;
using namespace redist::bench;

namespace {

const char* kUsage =
    "redist bench SUITE [--out DIR] [--reps N] [--scale S] [--smoke] [--no-plots] [--launches-note]\n"
    "                   [--auto-trials K] [--copy-threads T]\n"
    "redist bench compare SRC DST [REGION] [--out DIR] [--reps N]\n"
    "redist bench ctl_batch|ctl_isolate|dynamic_volume|multiple_send|taskgraph [--threads N] [options]\n"
    "redist bench pingpong|sched|tasks|cholesky|gemm [options]   the task runtime's (--help each)\n"
    "  SUITE: categories volume scatter gather random blocksize submatrix all (those seven),\n"
    "         (blocksize: paper 001 Fig. 13, K = 2..20, with the synchronized simple, random\n"
    "         and optimal schedules and MPI_Alltoall of the same volume),\n"
    "         memory (issue 10: time against the memory budget, 1/2 to 1/64 of the moved\n"
    "         volume, and each budgeted plan's measured buffers per rank),\n"
    "         groups (paper 002, CDT: (BLOCK,*) on P/2 senders -> (*,BLOCK) on the others,\n"
    "         every strategy, the algorithms of docs/groups.md among them, against N),\n"
    "         fine (tiles of 1-32 elements: plan time and plan memory beside the times),\n"
    "         tran (8000^2 transposes, region axes=1,0, beside ScaLAPACK's pdtran),\n"
    "         shm (issue 14's cases a-e, arrays in shared windows and on the heap: shm,\n"
    "         direct, alltoallw, p2p, p2p_pipelined, auto, pdgemr2d and each one's time /\n"
    "         the single-copy limit, timed in the same rounds as the method `single copy`),\n"
    "         dropin (compare's cases and 100 calls on 100^2 through pdgemr2d_ of\n"
    "         libredist_scalapack: `dropin` with plans cached, `dropin first call` with\n"
    "         planning in each call, beside ScaLAPACK's pdgemr2d; docs/scalapack.md),\n"
    "         repartition (paper 003: 280^3 and 528^3 doubles onto 16^3-64^3 patches, greedy\n"
    "         and balanced placement, per patch = segment vs per rank = p2p; prints the\n"
    "         moved volume, load imbalance and the per-patch / per-rank time ratio),\n"
    "         threads (copy threads per rank: rank 0's array to rank 1 in shared windows\n"
    "         and on the heap, rank 0 re-tiling its own, issue 14's case a; shm and p2p\n"
    "         on 1 and on T copy threads in the same rounds, and their ratio)\n"
    "  taskgraph suites (paper 000 sec. 8.2, docs/taskgraph.md): each times the taskgraph\n"
    "  strategy with one optimization switched (batch Fig. 6a, isolate_segments Fig. 6b,\n"
    "  dynamic_volume Fig. 7, multiple_send and eager payloads Fig. 8) beside its base\n"
    "  and p2p, and prints each variant's speedup over the base; `taskgraph` runs all four.\n"
    "  Times every redist strategy, auto and ScaLAPACK's pdgemr2d (2-D block-cyclic\n"
    "  local_array cases only) on each case, interleaved, after one verified warm-up\n"
    "  each; prints bandwidth (paper 000 Eq. 3), its ratio to the bound (Eq. 5) and\n"
    "  the speedup over pdgemr2d, and writes DIR/results.json (docs/results.md),\n"
    "  DIR/results.csv and, when Python's matplotlib is there, the plots DIR/*.png.\n"
    "  compare: one case of your own, SRC and DST 2-D block_cyclic spec strings\n"
    "  (docs/spec.md; storage forced to local_array so pdgemr2d applies), REGION\n"
    "  'SIZE [from=SRC_OFFSET] [to=DST_OFFSET] [axes=1,0]' (default: the overlap of both\n"
    "  shapes; axes=1,0 transposes, timed beside pdtran, which needs one grid for both).\n"
    "  --out DIR        results folder (default results/SUITE)\n"
    "  --reps N         timed runs per method (default 5); the median is reported\n"
    "  --scale S        multiplies the array sizes (default 1; above 0, at most 1000)\n"
    "  --smoke          two small cases per suite, --reps at most 2, --scale 0.1 unless given\n"
    "  --no-plots       do not run bench/plot.py at the end\n"
    "  --threads N      worker threads per rank of the taskgraph strategy (default 1;\n"
    "                   with one rank and N > 1 launch with --bind-to none)\n"
    "  --launches-note  print how the ranks are placed (ranks per node vs cores)\n"
    "  --copy-threads T the threads suite's copy threads per rank (2..1024, default 2;\n"
    "                   launch with mpirun --bind-to none: a rank bound to one core\n"
    "                   runs its threads on it)\n"
    "  --auto-trials K  auto times its two best-predicted strategies in turn, 2K\n"
    "                   executes before its verified warm-up, then keeps the faster\n"
    "                   (Options::auto_trials; 0..1000, default 0: the model alone);\n"
    "                   its timed runs are the kept strategy's, results.json lists\n"
    "                   the trials under auto's `trials`\n"
    "  --inject-error   testing only: corrupt one target element after the first\n"
    "                   warm-up, to show that a wrong result fails the run\n"
    "Exit code 1 when any verification fails, 2 on bad arguments.\n";

int rank_ = 0, nranks_ = 1;

// Arguments are the same on every rank (compared first), so is the error: rank 0
// prints it, every rank with REDIST_SHOW_ERRORS=1 (as `redist run` does).
[[noreturn]] void fail(const std::string& msg) {
  if (rank_ == 0 || std::getenv("REDIST_SHOW_ERRORS")) std::fprintf(stderr, "redist bench: error: %s\n", msg.c_str());
  MPI_Finalize();
  std::exit(2);
}

// A whole number from lo to hi, all of `v` (not atoi's prefix: "1.5" and "2x" are refused).
int whole_number(const std::string& option, const std::string& v, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long k = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || k < lo || k > hi)
    fail(option + " needs a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + v +
         "'");
  return static_cast<int>(k);
}

Layout as_local_array(const Layout& l) {
  return Layout(l.shape(), l.partitions(), l.ownership(), Storage{StorageKind::local_array, l.storage().ld},
                l.elem_size());
}

// `compare SRC DST [REGION]`: one case of the user's, pdgemr2d beside redist.
Case compare_case(const std::vector<std::string>& pos) {
  if (pos.size() < 2 || pos.size() > 3) fail("compare takes SRC DST [REGION] (see --help)");
  Case c{"compare", "compare", "your layouts, pdgemr2d beside redist", 0, "", "", "", "", false};
  try {
    const Layout src = as_local_array(Layout::parse(pos[0])), dst = as_local_array(Layout::parse(pos[1]));
    // The layouts' own errors (tile=0x1) before the header and the machine's
    // measurement, not in the first case's plan.
    for (const auto& [l, side] : {std::pair{&src, "SRC"}, std::pair{&dst, "DST"}})
      if (std::string why = l->check(nranks_); !why.empty()) fail(std::string(side) + ": " + why);
    for (const Layout* l : {&src, &dst})
      if (std::string why = scalapack::unsupported(*l); !why.empty()) fail(why + ": " + l->spec());
    c.src = src.spec();
    c.dst = dst.spec();
    if (pos.size() == 3) {
      c.region = pos[2];
      // compare is there for ScaLAPACK's reference: a case it has no call for is refused.
      const Region region = Region::parse(c.region);
      if (std::string why = region.check(src.shape(), dst.shape()); !why.empty()) fail("REGION: " + why);
      if (region.permutes())
        if (std::string why = scalapack::tran_unsupported(src, dst, region); !why.empty())
          fail("compare: ScaLAPACK has no call for this case: pdgemr2d does not transpose, and " + why +
               " (the region's axes= permutes; SRC's and DST's grid and owners must be the same); `redist run` "
               "times redist's strategies on it alone");
    } else {
      Region region = Region::whole(src.shape());
      for (int d = 0; d < 2; ++d) region.size[d] = std::min(src.shape()[d], dst.shape()[d]);
      c.region = region.str();
    }
  } catch (const Error& e) {
    fail(e.what());
  }
  return c;
}

// Taskgraph suites: each variant's speedup over the base `taskgraph`, measured in
// this run (and, for dynamic_volume, its share of the theoretical speedup).
void print_effects(const Case& c, const harness::CaseResult& r) {
  auto median = [&r](const std::string& name) {
    for (const harness::MethodResult& m : r.methods)
      if (m.name == name) return m.median;
    return 0.0;
  };
  const double base = median("taskgraph");
  for (const Variant& v : c.variants) {
    const double t = median(v.name);
    if (!(base > 0 && t > 0)) continue;
    std::printf("  effect: %-26s %6.2fx the speed of taskgraph (%s)", v.name.c_str(), base / t, c.name.c_str());
    if (c.theory > 1)
      std::printf(", theory %.2fx: %.0f%% of it", c.theory, 100.0 * (base / t) / c.theory);
    std::printf("\n");
  }
}

// A case between two groups: each method's messages and bytes in one execute
// (paper 002 Eq. 1's M and D; bench/plot.py fits t_m and t_w to them).
void route_figures(const Case& c, harness::CaseResult& r) {
  const Layout src = Layout::parse(c.src), dst = Layout::parse(c.dst);
  const Region region = c.region.empty() ? Region::whole(src.shape()) : Region::parse(c.region);
  const auto routes = detail::group_route_counts(src, dst, region, r.ranks, c.senders, c.overlap);
  for (harness::MethodResult& m : r.methods) {
    const std::string& name = m.chose.empty() ? m.name : m.chose;
    for (const detail::RouteCounts& rc : routes)
      if (rc.strategy == name) {
        m.route_messages = m.route_bytes = 0;
        for (const detail::RelayCounts& x : rc.ranks) m.route_messages += x.messages_sent, m.route_bytes += x.bytes_sent;
      }
  }
}

// The memory suite: per budgeted method its budget and measured buffers per rank.
struct BudgetRow {
  std::string name;
  index_t budget;
  std::vector<long long> used;  // Plan::buffer_bytes per rank (rank 0's copy)
};

template <class B>
std::vector<BudgetRow> budgeted_rows(const std::vector<B>& budgeted) {
  std::vector<BudgetRow> rows;
  for (const B& b : budgeted) {
    long long mine = b.plan->buffer_bytes();
    std::vector<long long> all(static_cast<size_t>(nranks_));
    MPI_Gather(&mine, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    rows.push_back({b.name, b.budget, all});
  }
  return rows;
}

// Each budgeted method's median over the unbudgeted best (measured in this run,
// interleaved) and its measured buffers on every rank against the budget.
void print_budgets(const harness::CaseResult& r, const std::vector<BudgetRow>& rows, index_t moved) {
  if (rank_ != 0) return;
  const harness::MethodResult* best = nullptr;
  for (const harness::MethodResult& m : r.methods) {
    const bool is_budgeted = std::any_of(rows.begin(), rows.end(), [&](const BudgetRow& b) { return b.name == m.name; });
    if (!is_budgeted && m.name != "alltoall" && m.median > 0 && (!best || m.median < best->median)) best = &m;
  }
  std::printf("  memory: moved %.1f MB on the busiest rank; unbudgeted best %s %.4f s\n", double(moved) / 1e6,
              best ? best->name.c_str() : "-", best ? best->median : 0.0);
  for (const BudgetRow& b : rows) {
    const harness::MethodResult* m = r.find(b.name);
    long long hi = 0;
    std::string per;
    for (size_t i = 0; i < b.used.size(); ++i) {
      hi = std::max(hi, b.used[i]);
      if (i) per += ' ';
      per += std::to_string(b.used[i]);
    }
    std::printf("  memory: %-24s budget %10lld B, buffers per rank [%s] B: %s; %.4f s = %.2fx the unbudgeted best\n",
                b.name.c_str(), static_cast<long long>(b.budget), per.c_str(), hi <= b.budget ? "under" : "OVER",
                m ? m->median : 0.0, m && best && best->median > 0 ? m->median / best->median : 0.0);
  }
  // Per budget: the fastest method that ran under it.
  for (size_t i = 0; i < rows.size(); ++i) {
    const BudgetRow* fastest = nullptr;
    for (const BudgetRow& b : rows) {
      const harness::MethodResult *m = r.find(b.name), *f = fastest ? r.find(fastest->name) : nullptr;
      if (b.budget == rows[i].budget && m && m->median > 0 && (!f || m->median < f->median)) fastest = &b;
    }
    if (fastest != &rows[i]) continue;
    const double t = r.find(fastest->name)->median;
    std::printf("  memory: budget %10lld B: fastest %s, %.2fx the unbudgeted best\n",
                static_cast<long long>(fastest->budget), fastest->name.c_str(),
                best && best->median > 0 ? t / best->median : 0.0);
  }
}

// The threads suite: a strategy's method on a plan with copy threads.
std::string threaded_name(const std::string& strategy, int threads) {
  return strategy + " x" + std::to_string(threads) + " threads";
}

// The threads suite: each strategy's median with copy threads over its median on
// one thread, both timed in the same rounds.
void print_copy_threads(const Case& c, const harness::CaseResult& r) {
  for (const std::string& s : c.thread_strategies) {
    const harness::MethodResult *one = r.find(s), *many = r.find(threaded_name(s, c.copy_threads));
    if (!one || !many || one->median <= 0) continue;
    std::printf("  copy threads: %-5s %d threads %.3f ms against 1 thread %.3f ms: %.2fx the time\n", s.c_str(),
                c.copy_threads, many->median * 1e3, one->median * 1e3, many->median / one->median);
  }
}

// Runs one case on every rank; the result is the same on every rank.
harness::CaseResult run_case(const Case& c, const std::shared_ptr<const Machine>& machine, int reps,
                             bool inject_error, int auto_trials) {
  Layout src, dst;
  Region region;
  std::unique_ptr<harness::CaseRun> run;
  try {
    src = Layout::parse(c.src);
    dst = Layout::parse(c.dst);
    region = c.region.empty() ? Region::whole(src.shape()) : Region::parse(c.region);
    Options opt;
    opt.machine = machine;  // one model for the whole run: auto and the predictions
    opt.taskgraph = c.base;
    opt.auto_trials = auto_trials;  // the harness runs the trials before auto's verified warm-up
    if (c.copy_threads > 0) opt.copy_threads = 1;  // the threads suite: 1 here, c.copy_threads on its own plans
    // Where CaseRun allocates (harness::shared_storage_requested).
    if (c.shared_storage) setenv("REDIST_STORAGE", *c.shared_storage ? "shared" : "heap", 1);
    run = c.senders > 0 ? harness::group_case_run(src, dst, region, MPI_COMM_WORLD, c.senders, c.overlap, opt)
                        : std::make_unique<harness::CaseRun>(src, dst, region, MPI_COMM_WORLD, opt);
  } catch (const std::exception& e) {
    fail(c.name + ": " + e.what());
  }
  // Taskgraph suites: the base, its variants (plans of their own on the same
  // storage) and p2p for scale; the other suites: every strategy and auto.
  std::vector<Plan> variant_plans;
  if (!c.variants.empty()) {
    run->add_strategy("taskgraph");
    run->add_strategy("p2p");
    for (const Variant& v : c.variants) {
      Options o;
      o.taskgraph = v.opt;
      variant_plans.push_back(make_plan(src, dst, region, MPI_COMM_WORLD, o));
    }
    for (size_t i = 0; i < c.variants.size(); ++i) {
      Plan* plan = &variant_plans[i];
      const void* a = run->source().data();
      void* b = run->target().data();
      run->add_method(c.variants[i].name, [plan, a, b] { plan->execute(a, b, "taskgraph"); });
    }
  } else if (c.dropin_calls > 1) {
    // Many calls per timed run: the drop-in and ScaLAPACK only (below).
  } else if (c.strategies.empty()) {
    for (const std::string& s : strategy_names()) run->add_strategy(s);
    run->add_strategy(std::string(kAuto));
  } else {
    for (const std::string& s : c.strategies) run->add_strategy(s);
  }
  std::unique_ptr<scalapack::Redistribution> pdg;
  if (c.senders == 0 && src.storage().kind == StorageKind::local_array &&
      dst.storage().kind == StorageKind::local_array &&
      scalapack::unsupported(src).empty() && scalapack::unsupported(dst).empty() &&
      (!region.permutes() || scalapack::tran_unsupported(src, dst, region).empty())) {
    const LocalIndex lsrc(src, rank_), ldst(dst, rank_);
    pdg = std::make_unique<scalapack::Redistribution>(src, lsrc.ld(), dst, ldst.ld(), region);
    if (!pdg->ok) fail(c.name + ": descinit rejected a descriptor");
    auto* a = static_cast<double*>(run->source().data());
    auto* b = static_cast<double*>(run->target().data());
    const int calls = std::max(1, c.dropin_calls);
    run->add_method(pdg->name(), [&pdg, a, b, calls] {
      for (int k = 0; k < calls; ++k) pdg->run(a, b);  // ScaLAPACK's (native mode, set in main)
    });
    if (c.dropin_calls > 0 && !pdg->transpose) {
      // The same calls through libredist_scalapack: plans cached (the second call on
      // hits), and a first call each time (plans freed: a fresh descriptor pair).
      run->add_method("dropin", [&pdg, a, b, calls] {
        redist_scalapack_set_native(0);
        for (int k = 0; k < calls; ++k) pdg->run(a, b);
        redist_scalapack_set_native(1);
      });
      run->add_method("dropin first call", [&pdg, a, b, calls] {
        redist_scalapack_set_native(0);
        for (int k = 0; k < calls; ++k) {
          redist_scalapack_free_plans();
          pdg->run(a, b);
        }
        redist_scalapack_set_native(1);
      });
    }
  }
  // Paper 001 Fig. 13: the synchronized simple, random and optimal schedules on the plan.
  std::vector<std::unique_ptr<PaperPhases>> paper;
  if (c.paper_k > 0 && nranks_ > 1) {
    const void* a = run->source().data();
    void* b = run->target().data();
    for (auto [kind, name] : {std::pair{PaperSchedule::simple, "sync simple"}, {PaperSchedule::random, "sync random"},
                              {PaperSchedule::optimal, "sync optimal"}}) {
      paper.push_back(std::make_unique<PaperPhases>(run->plan(), kind, c.paper_k));
      PaperPhases* ph = paper.back().get();
      run->add_method(name, [ph, a, b] { ph->run(a, b); });
      if (rank_ == 0)
        std::printf("  schedule: %-12s K=%-2d %2d phases, at most %d messages received by one rank in a phase\n",
                    name, c.paper_k, ph->phases(), ph->max_receives());
    }
  }
  // Issue 10's memory suite: each budgeted strategy on a plan made with the budget.
  struct Budgeted {
    std::string name;
    index_t budget;
    std::unique_ptr<Plan> plan;
  };
  std::vector<Budgeted> budgeted;
  if (!c.budgets.empty() && nranks_ > 1) {
    const index_t moved = run->stats().max_remote_bytes;
    const void* a = run->source().data();
    void* b = run->target().data();
    for (double f : c.budgets)
      for (const std::string& s : c.budget_strategies) {
        Options o;
        o.strategy = s;
        o.max_buffer_bytes = std::max<index_t>(1, static_cast<index_t>(static_cast<double>(moved) * f));
        budgeted.push_back({s + " @1/" + std::to_string(std::lround(1 / f)), o.max_buffer_bytes,
                            std::make_unique<Plan>(make_plan(src, dst, region, MPI_COMM_WORLD, o))});
        Plan* plan = budgeted.back().plan.get();
        const std::string name = s;
        run->add_method(budgeted.back().name, [plan, a, b, name] { plan->execute(a, b, name); });
      }
  }
  // The threads suite: each of its strategies again on a plan with copy threads.
  std::vector<std::unique_ptr<Plan>> threaded;
  if (c.copy_threads > 0) {
    const void* a = run->source().data();
    void* b = run->target().data();
    for (const std::string& s : c.thread_strategies) {
      Options o;
      o.strategy = s;
      o.machine = machine;
      o.copy_threads = c.copy_threads;
      threaded.push_back(std::make_unique<Plan>(make_plan(src, dst, region, MPI_COMM_WORLD, o)));
      Plan* plan = threaded.back().get();
      run->add_method(threaded_name(s, c.copy_threads), [plan, a, b, s] { plan->execute(a, b, s); });
    }
  }
  // Paper 001's yardstick: a plain MPI_Alltoall moving the busiest rank's remote
  // volume, spread evenly over its peers.
  std::vector<char> sa, sb;
  const index_t remote = run->stats().max_remote_bytes;
  if (c.alltoall && nranks_ > 1 && remote > 0) {
    const int per_peer = static_cast<int>((remote + nranks_ - 2) / (nranks_ - 1));
    sa.assign(static_cast<size_t>(per_peer) * nranks_, 1);
    sb.assign(sa.size(), 0);
    run->add_method("alltoall", [&sa, &sb, per_peer] {
      MPI_Alltoall(sa.data(), per_peer, MPI_BYTE, sb.data(), per_peer, MPI_BYTE, MPI_COMM_WORLD);
    }, false);
  }
  if (c.single_copy) run->add_single_copy();
  harness::MeasureOptions mo;
  mo.reps = reps;
  mo.inject_error = inject_error;
  harness::CaseResult r = run->measure(mo);
  if (!budgeted.empty()) print_budgets(r, budgeted_rows(budgeted), run->stats().max_remote_bytes);
  r.suite = c.suite, r.series = c.series, r.name = c.name, r.x = c.x, r.x_label = c.x_label;
  r.src = c.src, r.dst = c.dst, r.region = c.region;  // as the suite wrote them (pool.py matches on them)
  return r;
}

// Paper 003's figures per case: moved volume, patches per rank and imbalance
// (the placement, computed here), messages per pattern, measured medians, the
// model's predictions, and per patch / per rank (< 1: per patch faster).
void repartition_summary(FILE* f, const std::vector<harness::CaseResult>& cases) {
  std::fprintf(f, "\nrepartition (paper 003): per patch = segment, per rank = p2p; medians, slowest rank\n");
  std::fprintf(f, "%-26s %10s %9s %8s %8s %10s %10s %10s %10s %7s %7s\n", "case", "moved", "patches", "imbal.",
               "msgs pp", "pp ms", "pr ms", "pred pp ms", "pred pr ms", "pp/pr", "pred.");
  std::vector<double> ratios;
  for (const harness::CaseResult& r : cases) {
    const harness::MethodResult *pp = r.find("segment"), *pr = r.find("p2p");
    if (!pp || !pr) continue;
    const PlacementSummary s = placement_summary(Layout::parse(r.dst));
    const index_t hi = *std::max_element(s.load.begin(), s.load.end());
    const double mean = double(s.patches) / double(s.load.size());
    const double ratio = pr->median > 0 ? pp->median / pr->median : 0;
    ratios.push_back(ratio);
    const double bytes = double(s.moved_elements) * double(Layout::parse(r.dst).elem_size());
    std::fprintf(f, "%-26s %10s %9lld %8.3f %8lld %10.3f %10.3f %10.3f %10.3f %7.3f %7.3f\n", r.name.c_str(),
                 (std::to_string(static_cast<long long>(bytes / 1000)) + " KB").c_str(), (long long)s.patches,
                 mean > 0 ? double(hi) / mean : 0.0, (long long)r.stats.segments, pp->median * 1e3, pr->median * 1e3,
                 pp->predicted * 1e3, pr->predicted * 1e3, ratio, pr->predicted > 0 ? pp->predicted / pr->predicted : 0.0);
  }
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();  // an even count: the mean of the middle two
    const double median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
    std::fprintf(f, "per-patch / per-rank time: median %.3f over %zu cases (min %.3f, max %.3f)\n", median, n,
                 ratios.front(), ratios.back());
  }
}

// Runs argv[0] (looked up in PATH) with `args`, no shell between (a folder name
// with a quote once broke the command, and could have run another): stdout, and
// stderr when `quiet`, to /dev/null. Its exit status, or -1 when it did not run.
int run_quietly(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (quiet) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// bench/plot.py into the results folder, with the project's Python when it has
// matplotlib (rank 0 only). Says what it did either way.
void plot(const std::string& out) {
  std::string py;
  if (const char* e = std::getenv("REDIST_PYTHON")) py = e;
  else if (access(REDIST_SOURCE_DIR "/.venv/bin/python", X_OK) == 0) py = REDIST_SOURCE_DIR "/.venv/bin/python";
  else py = "python3";
  const std::string script = REDIST_SOURCE_DIR "/bench/plot.py";
  if (run_quietly({py, "-c", "import matplotlib"}, true) != 0) {
    std::printf("plots: skipped (no matplotlib for %s; `pip install matplotlib`, then `python3 %s %s/results.json`)\n",
                py.c_str(), script.c_str(), out.c_str());
    return;
  }
  const std::vector<std::string> cmd{py, script, out + "/results.json"};
  if (run_quietly(cmd, false) == 0)
    std::printf("plots: %s/*.png\n", out.c_str());
  else
    std::printf("plots: %s %s %s/results.json failed (the results are written)\n", py.c_str(), script.c_str(),
                out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // The taskgraph strategy's workers post their own messages (multiple_send):
  // MPI_THREAD_MULTIPLE, as `redist run` asks for when threads are used.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // pdgemr2d_ and pdtran_ resolve to libredist_scalapack (linked before ScaLAPACK):
  // ScaLAPACK's own routines unless the `dropin` suite switches for its methods.
  redist_scalapack_set_native(1);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  try {
    harness::agree_launch(MPI_COMM_WORLD, argc, argv);
  } catch (const Error& e) {
    const std::string msg = e.what();
    fail(msg.rfind("redist: ", 0) == 0 ? msg.substr(8) : msg);
  }
  std::string suite, out;
  std::vector<std::string> positional;
  int reps = 5, threads = 1, auto_trials = 0, copy_threads = 2;
  double scale = 0;
  bool smoke = false, launches_note = false, inject_error = false, plots = true;
  std::vector<std::string> seen;  // options given: twice is an error, as in `redist run` (the last won)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a.rfind("--", 0) == 0) {
      if (std::find(seen.begin(), seen.end(), a) != seen.end()) fail(a + " is given twice; give it once");
      seen.push_back(a);
    }
    if (a == "--help" || a == "-h") {
      if (rank_ == 0) std::printf("%s", kUsage);
      MPI_Finalize();
      return 0;
    } else if (!has_value && (a == "--out" || a == "--reps" || a == "--scale" || a == "--threads" ||
                              a == "--copy-threads" || a == "--auto-trials")) {
      fail(a + " needs a value (see --help)");
    } else if (a == "--out") {
      out = argv[++i];
    } else if (a == "--reps") {
      reps = whole_number(a, argv[++i], 1, 1000000);
    } else if (a == "--scale") {
      // A positive, finite factor; at most 1000 (the 8000^2 cases would be 8e6^2).
      const std::string v = argv[++i];
      char* end = nullptr;
      errno = 0;
      scale = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0 || !(scale > 0) || !(scale <= 1000))
        fail("--scale needs a number above 0 and at most 1000, got '" + v + "'");
    } else if (a == "--threads") {
      threads = whole_number(a, argv[++i], 1, 1024);
    } else if (a == "--copy-threads") {
      copy_threads = whole_number(a, argv[++i], 2, 1024);
    } else if (a == "--auto-trials") {
      auto_trials = whole_number(a, argv[++i], 0, 1000);
    } else if (a == "--smoke") {
      smoke = true;
    } else if (a == "--no-plots") {
      plots = false;
    } else if (a == "--launches-note") {
      launches_note = true;
    } else if (a == "--inject-error") {
      inject_error = true;
    } else if (a.rfind("--", 0) == 0) {
      fail("unexpected argument " + a + " (see --help)");
    } else if (suite.empty()) {
      suite = a;
    } else if (suite == "compare") {
      positional.push_back(a);
    } else {
      fail("unexpected argument " + a + " (see --help)");
    }
  }
  if (smoke) {
    if (scale == 0) scale = 0.1;
    reps = std::min(reps, 2);
  }
  if (scale == 0) scale = 1;
  if (suite.empty()) fail("give a suite, e.g. `redist bench volume --smoke` (see --help)");
  std::vector<Case> cases = suite == "compare" ? std::vector<Case>{compare_case(positional)}
                                               : make_suite(suite, nranks_, scale, smoke, threads);
  for (Case& c : cases)
    if (!c.thread_strategies.empty()) c.copy_threads = copy_threads;
  if (cases.empty()) fail("unknown suite '" + suite + "' (see --help)");
  if (out.empty()) out = "results/" + suite;

  // One machine model for every case: calibration file, else quick (collective).
  const auto machine = std::make_shared<const Machine>(machine_for(MPI_COMM_WORLD));
  harness::Results doc;
  doc.tool = "redist bench " + suite;
  doc.suite = suite;
  doc.reps = reps;
  doc.scale = scale;
  doc.run = harness::run_info(MPI_COMM_WORLD);
  doc.machine = machine.get();
  Report report(doc);
  // The results folder is made and written once before any case runs: a folder
  // that cannot be written fails here, on every rank, not after the whole suite.
  int writable = 1;
  if (rank_ == 0) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    writable = report.write(out) ? 1 : 0;
  }
  MPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!writable) fail("cannot write results.json and results.csv into --out " + out);
  bool written = true;
  if (rank_ == 0) {
    report.print_header(stdout);
    if (launches_note || report.run().oversubscribed()) report.print_launches(stdout);
  }

  const double t0 = MPI_Wtime();
  bool all_ok = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (rank_ == 0) progress(stderr, i + 1, cases.size(), cases[i].name, MPI_Wtime() - t0);
    harness::CaseResult r = run_case(cases[i], machine, reps, inject_error, auto_trials);
    all_ok = all_ok && r.ok();
    if (rank_ == 0 && cases[i].senders > 0) route_figures(cases[i], r);
    if (rank_ == 0) {
      progress_done(stderr);
      print_case(stdout, r, i + 1, cases.size());
      if (!cases[i].variants.empty()) print_effects(cases[i], r);
      if (cases[i].copy_threads > 0) print_copy_threads(cases[i], r);
    }
    report.add(std::move(r));
    if (rank_ == 0 && !report.write(out)) {
      std::fprintf(stderr, "redist bench: cannot write to %s\n", out.c_str());
      written = false;
    }
  }
  if (rank_ == 0 && suite == "repartition") repartition_summary(stdout, report.cases());
  if (rank_ == 0) {
    report.print_summary(stdout);
    if (written)
      std::printf("results: %s/results.json, %s/results.csv (%.1f s)\n", out.c_str(), out.c_str(), MPI_Wtime() - t0);
    if (plots && written) plot(out);
    if (!all_ok) std::fprintf(stderr, "redist bench: a verification FAILED\n");
  }
  MPI_Bcast(&written, 1, MPI_CXX_BOOL, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_ok && written ? 0 : 1;
}
