// `redist run`: redistribute on the launched ranks with the case harness
// (src/harness/case.hpp): time every strategy interleaved, verify against the
// serial oracle, print bandwidth vs the bound, or the results JSON (docs/results.md).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <complex>
#include <memory>

#include "cli.hpp"
#include "harness/case.hpp"
#include "harness/results.hpp"
#include "redist/groups.hpp"
#include "redist/redist.hpp"
#include "redist/shm.hpp"

namespace redist::cli {
namespace {

// "2.5" or "1.5,-2" (a complex number as RE,IM); throws redist::Error otherwise.
std::complex<double> parse_scalar(const Args& a, const std::string& key, double dflt) {
  if (!a.has(key)) return dflt;
  const std::string v = a.get(key, "");
  const size_t comma = v.find(',');
  auto number = [&](const std::string& t) {
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || !std::isfinite(x))
      detail::fail(key, " ", v, ": expected a finite number, or RE,IM for a complex one (e.g. 2.5 or 0.5,-1)");
    return x;
  };
  if (comma == std::string::npos) return number(v);
  return {number(v.substr(0, comma)), number(v.substr(comma + 1))};
}

const char* kUsage = R"(usage: mpirun -np P redist run SRC DST [REGION] [options]

Redistributes REGION of an array laid out as SRC into an array laid out as DST on
the P launched ranks, times it, verifies every element, and prints the median and
minimum time, the time the cost model predicts (max over ranks), the achieved
bandwidth (paper 000 Eq. 3: max over ranks of max(remote bytes sent, received) /
time), the bound of Eq. 5, and per-rank statistics. Machine figures come from
the calibration file (`redist calibrate`), else from a quick in-run measurement.

options:
  --strategy X     a strategy (`redist help strategies`), auto (the model's
                   choice) or all (every strategy and auto), or a comma list
                   (a name given twice runs once; default all)
  --reps N         timed repetitions per strategy, interleaved (default 5)
  --warmup N       untimed runs per strategy first; the first is verified (default 1; first touch);
                   before them a strategy runs the executes it spends tuning itself
                   (shm: 5, timing its rings' slot stores; docs/shm.md)
  --max-message B  split messages above B bytes into several (p2p, segment, phased,
                   shm's messages; default 1073741824); MPI's collectives
                   (alltoallv, alltoallw) are not split
  --type T         element type for arithmetic: f32, f64, c64, c128 (esize must
                   match), i32, i64 or bytes (default bytes: moved as they are)
  --alpha A        target = alpha * op(source) + beta * target while copying
  --beta B         (Options::arithmetic, docs/transforms.md); A and B real, or
                   complex as RE,IM; defaults 1 and 0. `all` then runs only the
                   strategies that apply it (`redist help strategies`)
  --conj           op = conjugate (complex types); with a region's axes=1,0 (or
                   `transpose`) the conjugate transpose
  --memory B       memory budget: at most B bytes of buffers per rank beyond the
                   source and target (Options::max_buffer_bytes); `all` then
                   runs only the strategies within it (phased, phased_sendrecv:
                   one message each way, as pieces of B/2 below that; alltoallw,
                   phased_dt: none); a named strategy over it, or a budget
                   nothing fits, is an error naming the smallest budget that
                   works (default: no budget)
  --storage S      where the harness allocates the arrays: heap (default) or
                   shared (MPI-3 shared windows, redist::shared_allocate: the
                   shm strategy then copies once; on the heap it moves rows
                   between ranks of the node through rings in shared memory,
                   packed by the sender, unpacked by the receiver, or with
                   $REDIST_SHM_FIFO=0 by cross-memory attach; docs/shm.md);
                   also $REDIST_STORAGE
  --auto-trials K  auto times its two best-predicted strategies in turn on its
                   first 2K executes, then keeps the faster (Options::auto_trials;
                   default 0: the model alone); the trials run before the
                   warm-up, so the timed runs are all the kept strategy's
  --node-size K    ranks per node for shm: nodes of K consecutive ranks (to
                   try the on-node and off-node paths on one machine; also
                   $REDIST_NODE_SIZE; default and 0: the shared-memory node); the
                   header's `nodes` line says which nodes it makes
  --copy-threads T threads per rank for its copies (local pieces, packing,
                   unpacking, shm's push into shared windows), each phase cut
                   into parts of at least 4 MB (Options::copy_threads; also
                   $REDIST_COPY_THREADS; default 1). Ranks bound to one core
                   gain nothing: mpirun binds each of 1-2 ranks to a core,
                   so pass --bind-to none to mpirun
  --senders N      two process groups (docs/groups.md): the first N ranks send
                   with SRC (their ranks 0..N-1), the rest receive with DST
  --overlap        with --senders: all P ranks receive (DST for P ranks)
  --no-verify      skip the element-by-element check
  --json           print the results as JSON instead of tables (docs/results.md)
  --timeout S      end the job (exit code 3) when one collective step (make_plan,
                   one execute, one verification, ...) takes more than S whole
                   seconds on a rank: a rank that stopped or hangs, or died
                   while the launcher keeps the job alive; the rank prints which
                   step (default: no limit; MPI starts with MPI_THREAD_MULTIPLE)
  taskgraph strategy (paper 000 sec. 6.2, docs/taskgraph.md):
  --tg-threads N   worker threads per rank (default 1; one rank with N > 1:
                   launch with --bind-to none)
  --tg-batch N     at most N target tile columns of Send tasks exposed per tile
                   row (control dependencies); auto: the paper's choice
                   (default); 0: no bound
  --tg-chained     receive the segments of a target tile one after another
                   (default: isolated, in parallel, joined by Finish)
  --tg-whole-tiles send each segment's whole source tile (default: only the
                   segment's bytes, dynamic volume)
  --tg-funneled    only the communication thread posts messages (default:
                   workers post their own, multiple_send)
  --tg-comm-thread a communication thread per rank progresses MPI (default:
                   the workers do, between tasks and while idle)
  --tg-packed      Send packs each remote segment into a buffer and Receive
                   unpacks it (default: it leaves from the source and lands in
                   the target as an MPI datatype, no copies)
  --tg-eager B     payloads up to B bytes ride inside the activation message
                   (default 16384; 0: none)
  --tg-grain G     target tiles per task group: 1 is the paper's graph (one
                   Send per segment); G > 1: one Send per group and pair of
                   ranks; auto (default): grouped only for small segments
  MPI starts with MPI_THREAD_MULTIPLE when taskgraph may run or --timeout is
  given, else MPI_THREAD_SINGLE (taskgraph runs funneled where MPI lacks
  MULTIPLE).
  --help           this text

exit codes: 0 verified, 1 a wrong element, 2 bad input (the same message on
every rank), 3 a fault (an MPI error on a rank, or --timeout); a rank killed
by a signal ends the job through the launcher (mpirun names the rank).

example:
  mpirun -np 2 redist run "8000x8000 tile=400x400 block_cyclic grid=1x2" \
      "8000x8000 tile=300x300 block_cyclic grid=2x1" "7000x7000 from=500x300 to=1000x0"
)";

struct RankRow {  // gathered to rank 0 for the per-rank table
  std::int64_t sent, received, local, msgs_out, msgs_in, segs_out, segs_in;
};

// "p2p,auto", "all" (every strategy, then auto) -> names, checked; a name given
// twice runs once (where it first stands).
std::vector<std::string> parse_strategies(const std::string& s) {
  std::vector<std::string> v;
  auto add = [&v](const std::string& n) {
    if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
  };
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string one = s.substr(pos, comma - pos);
    if (one == "all") {
      for (const std::string& n : strategy_names()) add(n);
      add(std::string(kAuto));
    } else {
      try {
        check_strategy(one);
      } catch (const Error& e) {  // the library's list, and `all`, which only this command knows
        detail::fail(e.what(), ", or all (every strategy, then auto)");
      }
      add(one);
    }
    pos = comma + 1;
  }
  return v;
}

// --test-ready-file PATH (hidden, for tests/python/test_cli.py): after the first
// timed round every rank writes its pid to PATH.RANK, so that a test can stop or
// kill one rank in the middle of the timed executes.
void write_ready_file(const std::string& path, int rank) {
  const std::string file = path + "." + std::to_string(rank), tmp = file + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%ld\n", static_cast<long>(getpid()));
    std::fclose(f);
    std::rename(tmp.c_str(), file.c_str());  // the test never reads half a file
  }
}

// The nodes that --node-size (or $REDIST_NODE_SIZE) makes of the ranks sharing
// rank 0's memory, for the header: a size at or above their count is one node,
// which would otherwise go unsaid (every path on-node).
void print_forced_nodes(int sharing) {
  int k = 0;
  try {
    k = node_size_from(0);
  } catch (const Error&) {
    return;  // a malformed variable: the plan's own check reports it
  }
  if (k <= 0 || sharing <= 0) return;
  const std::string ranks = counted(sharing, "rank", "ranks");
  if (k >= sharing) {
    std::printf("nodes    one: node size %d is not below the %s sharing memory here, so every path is on-node\n", k,
                ranks.c_str());
    return;
  }
  const int last = sharing - (sharing - 1) / k * k;
  std::printf("nodes    %d (node size %d%s) among the %s sharing memory here: on-node and off-node paths\n",
              (sharing + k - 1) / k, k, last < k ? (", the last of " + counted(last, "rank", "ranks")).c_str() : "",
              ranks.c_str());
}

}  // namespace

int cmd_run(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  // The watchdog's thread may call MPI_Abort: MPI_THREAD_MULTIPLE, only then
  // (the thread level is chosen before MPI starts, so before the options are parsed).
  const bool watch = has_option(argc, argv, 2, "--timeout");
  // taskgraph's workers post their own messages: MPI_THREAD_MULTIPLE when it may run.
  bool taskgraph = true;
  for (int i = 2; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--strategy")) {
      const std::string s = argv[i + 1];
      taskgraph = s.find("taskgraph") != std::string::npos || s.find("all") != std::string::npos ||
                  s.find("auto") != std::string::npos;
    }
  return run_with_mpi(argc, argv, "run", [&](int rank, int size) {
    // Everything is checked (collectively where it needs the ranks) before any
    // storage is allocated or filled: arguments here, layouts in CaseRun's make_plan.
    const Args a = parse_args(argc, argv, 2,
                              {"--strategy", "--reps", "--warmup", "--max-message", "--memory", "--timeout",
                               "--tg-threads", "--tg-batch", "--tg-eager", "--tg-grain", "--senders", "--type",
                               "--alpha", "--beta", "--storage", "--node-size", "--auto-trials",
                               "--copy-threads"},
                              {"--no-verify", "--json", "--help", "--tg-chained", "--tg-whole-tiles", "--tg-funneled",
                               "--tg-comm-thread", "--tg-packed", "--overlap", "--conj"},
                              {"--test-ready-file"});
    const Problem pb = parse_problem(a, kUsage);
    // Storage and node size for shm (docs/shm.md): read by the harness and the
    // plan from the environment, so that both agree.
    const std::string storage = storage_option(a, "");
    if (!storage.empty()) setenv("REDIST_STORAGE", storage.c_str(), 1);
    if (a.has("--node-size"))
      setenv("REDIST_NODE_SIZE", std::to_string(a.get_int("--node-size", 0, 0, INT_MAX)).c_str(), 1);
    if (a.has("--copy-threads"))  // read by every plan the run makes, as $REDIST_COPY_THREADS
      setenv("REDIST_COPY_THREADS", std::to_string(a.get_int("--copy-threads", 1, 1, 1024)).c_str(), 1);
    std::vector<std::string> names = parse_strategies(a.get("--strategy", "all"));
    harness::MeasureOptions mo;
    mo.reps = static_cast<int>(a.get_int("--reps", 5, 1, INT_MAX));
    mo.warmup = static_cast<int>(a.get_int("--warmup", 1, 0, INT_MAX));
    mo.verify = !a.has("--no-verify");
    const bool json = a.has("--json");
    Options opt;
    opt.max_message_bytes = a.get_int("--max-message", opt.max_message_bytes, 1);
    opt.max_buffer_bytes = a.get_int("--memory", 0, 1);
    opt.auto_trials = static_cast<int>(a.get_int("--auto-trials", 0, 0, 1000));
    opt.arithmetic.type = parse_element_type(a.get("--type", "bytes"));
    opt.arithmetic.alpha = parse_scalar(a, "--alpha", 1.0);
    opt.arithmetic.beta = parse_scalar(a, "--beta", 0.0);
    opt.arithmetic.conjugate = a.has("--conj");
    const bool arith = !opt.arithmetic.identity();
    // make_plan checks the budget and the arithmetic against the plan's strategy:
    // the one named, else auto (something fits).
    if (opt.max_buffer_bytes > 0 || arith) opt.strategy = names.size() == 1 ? names[0] : std::string(kAuto);
    std::string skipped;  // strategies of a list given that do not run, and why
    if (arith) {  // `all` or a list: only the strategies that apply the arithmetic
      std::string dropped;
      std::erase_if(names, [&](const std::string& n) {
        for (const StrategyInfo& i : strategies())
          if (i.name == n && !i.arithmetic) return dropped += (dropped.empty() ? "" : ", ") + n, true;
        return false;
      });
      if (names.empty())
        detail::fail("--strategy ", a.get("--strategy", "all"), ": none of these applies the arithmetic of --type, "
                     "--alpha, --beta or --conj; the strategies that do: ", arithmetic_strategies());
      if (!dropped.empty() && a.get("--strategy", "all") != "all")
        skipped = "not run: " + dropped + " (no arithmetic; the strategies that apply it: " + arithmetic_strategies() +
                  ")";
    }
    TaskgraphOptions& tg = opt.taskgraph;
    tg.threads = static_cast<int>(a.get_int("--tg-threads", 1, 1, 1024));
    tg.batch = a.get("--tg-batch", "auto") == "auto" ? TaskgraphOptions::kBatchAuto : a.get_int("--tg-batch", 0, 0);
    tg.isolate_segments = !a.has("--tg-chained");
    tg.dynamic_volume = !a.has("--tg-whole-tiles");
    tg.multiple_send = !a.has("--tg-funneled");
    tg.comm_thread = a.has("--tg-comm-thread");
    tg.datatypes = !a.has("--tg-packed");
    tg.eager_limit = a.get_int("--tg-eager", tg.eager_limit, 0);
    tg.grain = a.get("--tg-grain", "auto") == "auto" ? TaskgraphOptions::kGrainAuto : a.get_int("--tg-grain", 1, 1);
    const int timeout = static_cast<int>(a.get_int("--timeout", 0, 1, INT_MAX));
    std::unique_ptr<harness::Watchdog> watchdog;
    if (timeout > 0) watchdog = std::make_unique<harness::Watchdog>(timeout, "redist run", rank);
    harness::Watchdog* const wd = mo.watchdog = watchdog.get();
    using Step = harness::Watchdog::Step;

    // The model of auto, the predictions and the bound: the calibration file, else
    // quick; fixed by make_plan once it has checked the arguments (bad input fails
    // before the machine is measured).
    opt.model = true;

    const bool overlap = a.has("--overlap");
    const int senders = static_cast<int>(a.get_int("--senders", 0, 1, overlap ? size : size - 1));
    if (overlap && senders == 0) detail::fail("--overlap needs --senders N");
    std::unique_ptr<harness::CaseRun> run;
    {
      Step s(wd, "make_plan (and the machine model: the calibration file, else a quick measurement) and the storage");
      if (senders == 0) {
        run = std::make_unique<harness::CaseRun>(pb.src, pb.dst, pb.region, MPI_COMM_WORLD, opt);
      } else {  // two groups: each side passes only its own layout (docs/groups.md)
        run = harness::group_case_run(pb.src, pb.dst, pb.region, MPI_COMM_WORLD, senders, overlap, opt);
      }
    }
    if (opt.max_buffer_bytes > 0 && names.size() > 1) {
      // `all` or a list under a budget: the strategies within it, as the plan counts
      // them (max over ranks: the same on every rank; the forwarding strategies'
      // from their schedules), and auto. Those over it are said, with what they
      // need (a list failed in the strategy over it, `all` dropped them silently).
      std::string over, over_bytes;
      long long smallest = LLONG_MAX;
      std::erase_if(names, [&](const std::string& n) {
        const long long need = n == kAuto ? 0 : run->plan().extra_bytes(n);
        if (need <= opt.max_buffer_bytes) return false;
        over += (over.empty() ? "" : ", ") + n + " (" + human_bytes(double(need)) + ")";
        over_bytes += (over_bytes.empty() ? "" : ", ") + n + " needs " + std::to_string(need);
        smallest = std::min(smallest, need);
        return true;
      });
      if (names.empty())
        detail::fail("--memory ", opt.max_buffer_bytes, ": no strategy of --strategy ", a.get("--strategy", "all"),
                     " fits in it (bytes of buffers per rank beyond source and target: ", over_bytes,
                     "); give --memory ", smallest, " or more, or another strategy");
      if (!over.empty())
        skipped += (skipped.empty() ? "" : "; ") + std::string("over --memory ") +
                   human_bytes(double(opt.max_buffer_bytes)) + ", the buffers they need per rank: " + over;
    }
    const Machine* const machine = run->plan().machine();  // opt.model: never null
    for (const std::string& n : names) run->add_strategy(n);
    const bool tty = isatty(2) && !json && rank == 0;
    const std::string ready_file = a.get("--test-ready-file", "");
    mo.after_round = [&](int r) {
      if (tty) std::fprintf(stderr, "\rtiming: repetition %d/%d", r + 1, mo.reps);
      if (r == 0 && !ready_file.empty()) write_ready_file(ready_file, rank);
    };
    harness::CaseResult res = run->measure(mo);
    if (tty) std::fprintf(stderr, "\r%40s\r", "");
    res.suite = "run";
    res.name = "redist run";

    long long peak = run->plan().buffer_bytes();  // measured: the plan's data buffers, max over ranks
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    const PlanStats& st = run->plan().stats();
    RankRow row{st.bytes_sent, st.bytes_received, st.bytes_local, st.messages_sent, st.messages_received,
                st.segments_sent, st.segments_received};
    std::vector<RankRow> rows(static_cast<size_t>(size));
    harness::Results doc;
    {
      Step s(wd, "gathering the statistics of every rank");
      MPI_Gather(&row, sizeof row, MPI_BYTE, rows.data(), sizeof row, MPI_BYTE, 0, MPI_COMM_WORLD);
      doc.run = harness::run_info(MPI_COMM_WORLD);
    }
    doc.tool = "redist run";
    doc.reps = mo.reps;
    doc.machine = machine;
    if (rank != 0) return res.ok() ? 0 : 1;

    const harness::GlobalStats& g = res.stats;
    const harness::Limits& lim = res.limits;
    if (json) {
      std::string per_rank = "\"per_rank\": [";
      for (int r = 0; r < size; ++r) {
        const RankRow& w = rows[static_cast<size_t>(r)];
        per_rank += std::string(r ? ", " : "") + "{\"sent_bytes\": " + std::to_string(w.sent) +
                    ", \"received_bytes\": " + std::to_string(w.received) + ", \"local_bytes\": " +
                    std::to_string(w.local) + ", \"messages_out\": " + std::to_string(w.msgs_out) +
                    ", \"messages_in\": " + std::to_string(w.msgs_in) + ", \"segments_out\": " +
                    std::to_string(w.segs_out) + ", \"segments_in\": " + std::to_string(w.segs_in) + "}";
      }
      doc.extra_members = per_rank + "]";
      doc.cases.push_back(res);
      std::fputs(harness::to_json(doc).c_str(), stdout);
      return res.ok() ? 0 : 1;
    }
    std::printf("redist run on %s\n  source  %s\n  target  %s\n  region  %s (%s)\n",
                counted(size, "rank", "ranks").c_str(), pb.src.spec().c_str(), pb.dst.spec().c_str(), pb.region.str().c_str(),
                human_bytes(pb.region.empty() ? 0.0 : double(pb.region.size.volume()) * pb.src.elem_size()).c_str());
    if (doc.run.oversubscribed())
      std::printf("WARNING  %d ranks on a node of %u cores (oversubscribed): the times below check correctness, "
                  "they do not measure speed\n",
                  doc.run.ranks_per_node, doc.run.cores);
    std::printf("plan     %s (slowest rank), %s (largest); remote %s, local %s; %lld messages, %lld runs "
                "(remote + local), %lld segments sent, <= %lld segments per target tile\n",
                human_time(res.plan_seconds).c_str(), human_bytes(double(g.max_plan_bytes)).c_str(),
                human_bytes(double(g.total_remote_bytes)).c_str(), human_bytes(double(g.total_local_bytes)).c_str(),
                static_cast<long long>(g.messages), static_cast<long long>(g.runs), static_cast<long long>(g.segments),
                static_cast<long long>(g.max_segments_per_tile));
    if (machine->source == "quick")
      std::printf("calibration quick, measured in this run in %s (no file: `redist calibrate` saves one)\n",
                  human_time(machine->seconds).c_str());
    else if (machine->source.rfind("quick (", 0) == 0)  // the default file could not serve
      std::printf("calibration quick, measured in this run in %s: %s; `redist calibrate --force` replaces it\n",
                  human_time(machine->seconds).c_str(), machine->source.substr(7, machine->source.size() - 8).c_str());
    else
      std::printf("calibration %s (%s, %s)\n", machine->source.c_str(), machine->hostname.c_str(),
                  machine->created.c_str());
    if (lim.bound > 0)
      std::printf("machine  Bnet %s (ping-pong, %s messages), Bmemcpy %s -> bound %s (paper 000 Eq. 5, "
                  "T_extra = 0)\n",
                  human_rate(lim.bnet).c_str(), human_bytes(double(lim.message_bytes)).c_str(),
                  human_rate(lim.bmemcpy).c_str(), human_rate(lim.bound).c_str());
    else
      std::printf("machine  no remote bytes (or 1 rank): the bound of Eq. 5 does not apply\n");
    if (lim.single_copy > 0)
      std::printf("limit    single copy %s: every target byte written once (max over ranks %s) at %s per rank "
                  "with every rank copying (docs/shm.md)\n",
                  human_time(lim.single_copy).c_str(), human_bytes(double(g.max_written_bytes)).c_str(),
                  human_rate(machine->bmemcpy_node > 0 ? machine->bmemcpy_node : machine->bmemcpy).c_str());
    std::printf("model    picks %s (smallest predicted time, paper 000 Eq. 1)\n", res.model_choice.c_str());
    if (const char* t = std::getenv("REDIST_COPY_THREADS"); t && std::strcmp(t, "1") != 0)
      std::printf("threads  %s copy threads per rank (--copy-threads; docs/strategies.md): the limit and the model "
                  "are one thread's\n", t);
    print_forced_nodes(doc.run.ranks_per_node);
    std::printf("buffers  %s at most on a rank, measured (the plan's packed buffers, every strategy run)%s\n",
                human_bytes(double(peak)).c_str(),
                opt.max_buffer_bytes > 0 ? (" within --memory " + human_bytes(double(opt.max_buffer_bytes))).c_str()
                                         : "");
    if (!skipped.empty()) std::printf("skipped  %s\n", skipped.c_str());
    int width = 15;  // the name column: the longest name, auto's choice included
    for (const harness::MethodResult& m : res.methods)
      width = std::max(width, static_cast<int>(m.name.size() + (m.chose.empty() ? 0 : m.chose.size() + 2)));
    std::printf("\n%-*s %12s %12s %12s %14s %9s %8s  %s\n", width, "strategy", "median", "min", "predicted",
                "bandwidth", "of bound", "x 1-copy", mo.verify ? "verified" : "");
    bool above_bound = false;  // the legend below explains it
    for (const harness::MethodResult& m : res.methods) {
      char ratio[16] = "-", once[16] = "-";
      if (lim.bound > 0) {
        std::snprintf(ratio, sizeof ratio, "%.2f", res.ratio_to_bound(m));
        above_bound = above_bound || res.ratio_to_bound(m) > 1;
      }
      if (lim.single_copy > 0) std::snprintf(once, sizeof once, "%.2f", res.times_single_copy(m));
      const std::string v = !m.verified ? "" : m.wrong ? "FAILED (" + std::to_string(m.wrong) + " wrong)"
                                                       : "ok (" + std::to_string(m.checked) + " elements)";
      const std::string name = m.chose.empty() ? m.name : m.name + "(" + m.chose + ")";
      std::printf("%-*s %12s %12s %12s %14s %9s %8s  %s\n", width, name.c_str(), human_time(m.median).c_str(),
                  human_time(m.min).c_str(), std::isfinite(m.predicted) ? human_time(m.predicted).c_str() : "-",
                  human_rate(res.bandwidth(m)).c_str(),
                  ratio, once, v.c_str());
    }
    if (std::find(names.begin(), names.end(), "shm") != names.end())
      std::printf("shm      rank 0 %s\n", run->plan().describe("shm").c_str());
    std::printf("(median and min of %d interleaved repetitions after %d warm-up; bandwidth = paper 000 Eq. 3;\n"
                " predicted = cost model, max over ranks, docs/strategies.md)\n",
                mo.reps, mo.warmup);
    if (above_bound)
      std::printf("(of bound above 1: faster than Eq. 5's bound, which has every byte copied through memory at the\n"
                  " calibrated rates; bytes that stay in the caches, as in small cases, move faster)\n");
    std::printf("\n%5s %12s %12s %12s %9s %9s %10s %10s\n", "rank", "sent", "received", "local", "msgs out",
                "msgs in", "segs out", "segs in");
    for (int r = 0; r < size && r < 64; ++r) {
      const RankRow& w = rows[static_cast<size_t>(r)];
      std::printf("%5d %12s %12s %12s %9lld %9lld %10lld %10lld\n", r, human_bytes(double(w.sent)).c_str(),
                  human_bytes(double(w.received)).c_str(), human_bytes(double(w.local)).c_str(),
                  static_cast<long long>(w.msgs_out), static_cast<long long>(w.msgs_in),
                  static_cast<long long>(w.segs_out), static_cast<long long>(w.segs_in));
    }
    if (size > 64) std::printf("  ... %d more ranks\n", size - 64);
    return res.ok() ? 0 : 1;
  }, watch || taskgraph);
}

}  // namespace redist::cli
