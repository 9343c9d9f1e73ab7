// `redist run`: redistribute on the launched ranks, time every executor
// interleaved, verify against the serial oracle, print bandwidth vs the bound.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "redist/cost.hpp"
#include "redist/pattern.hpp"
#include "redist/redist.hpp"
#include "timing.hpp"

namespace redist::cli {
namespace {

const char* kUsage = R"(usage: mpirun -np P redist run SRC DST [REGION] [options]

Redistributes REGION of an array laid out as SRC into an array laid out as DST on
the P launched ranks, times it, verifies every element, and prints the median and
minimum time, the time the cost model predicts (max over ranks), the achieved
bandwidth (paper 000 Eq. 3: max over ranks of max(remote bytes sent, received) /
time), the bound of Eq. 5, and per-rank statistics. Machine figures come from
the calibration file (`redist calibrate`), else from a quick in-run measurement.

options:
  --executor X     p2p | segment | alltoallv | alltoallw | direct | auto | all,
                   or a comma list (default all; auto: the model's choice)
  --reps N         timed repetitions per executor, interleaved (default 5)
  --warmup N       untimed runs per executor first (default 1; first touch)
  --max-message B  split messages above B bytes (default 1073741824)
  --no-verify      skip the element-by-element check
  --json           print one JSON object instead of tables
  --help           this text

example:
  mpirun -np 2 redist run "8000x8000 tile=400x400 block_cyclic grid=1x2" \
      "8000x8000 tile=300x300 block_cyclic grid=2x1" "7000x7000 from=500x300 to=1000x0"
)";

// This rank's storage: one buffer per block (tile_pointers: one per tile).
struct Store {
  std::vector<std::unique_ptr<std::byte[]>> blocks;
  std::vector<void*> ptr;
  std::vector<const void*> cptr;
  Store(const Layout& l, int rank) {
    const LocalIndex li(l, rank);
    for (index_t b = 0; b < li.nblocks(); ++b) {
      const index_t bytes = li.block_elements(b) * l.elem_size();
      blocks.emplace_back(bytes ? new std::byte[static_cast<size_t>(bytes)] : nullptr);
      ptr.push_back(blocks.back().get());
      cptr.push_back(blocks.back().get());
    }
  }
};

struct RankRow {  // gathered to rank 0 for the per-rank table
  long long sent, received, local, msgs_out, msgs_in, segs_out, segs_in, max_seg_tile;
};

std::vector<Executor> parse_executors(const std::string& s) {
  if (s == "all") return all_executors();
  std::vector<Executor> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string one = s.substr(pos, comma - pos);
    if (one == "all")
      for (Executor e : all_executors()) v.push_back(e);
    else
      v.push_back(parse_executor(one));
    pos = comma + 1;
  }
  return v;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  return run_with_mpi(argc, argv, "run", [&](int rank, int size) {
    int rc = 0;
    const Args a = parse_args(argc, argv, 2, {"--executor", "--reps", "--warmup", "--max-message"},
                              {"--no-verify", "--json", "--help"});
    const Problem pb = parse_problem(a, kUsage);
    const std::vector<Executor> execs = parse_executors(a.get("--executor", "all"));
    const int reps = static_cast<int>(a.get_int("--reps", 5, 1));
    const int warmup = static_cast<int>(a.get_int("--warmup", 1, 0));
    const bool json = a.has("--json"), verify = !a.has("--no-verify");
    Options opt;
    opt.max_message_bytes = a.get_int("--max-message", opt.max_message_bytes, 1);

    Store s(pb.src, rank), d(pb.dst, rank);
    fill_pattern(pb.src, rank, s.ptr, 1);
    fill_pattern(pb.dst, rank, d.ptr, 2);

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    Plan plan = make_plan(pb.src, pb.dst, pb.region, MPI_COMM_WORLD, opt);
    double plan_time = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &plan_time, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const PlanStats& st = plan.stats();

    // Eq. 3 and Eq. 5 need the maxima over ranks.
    long long mx[3] = {std::max(st.bytes_sent, st.bytes_received), st.bytes_local,
                       st.messages_sent ? st.bytes_sent / st.messages_sent : 0};
    MPI_Allreduce(MPI_IN_PLACE, mx, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    const Machine machine = machine_for(MPI_COMM_WORLD);  // file, else quick (collective)
    const index_t msg = mx[2] ? mx[2] : 1 << 20;
    const double bnet = machine.net_bandwidth(static_cast<double>(msg));
    const double bound = bound_bandwidth(machine, mx[0], mx[1], msg);
    // The model's view: max-over-ranks prediction of every executor, and its pick.
    std::vector<double> predicted_all;
    const Executor model_choice = choose_executor(plan.rank_plan(), machine, MPI_COMM_WORLD, &predicted_all);
    const std::vector<Executor> all = all_executors();
    auto predicted = [&](Executor e) {
      if (e == Executor::auto_) e = model_choice;
      return predicted_all[static_cast<size_t>(std::find(all.begin(), all.end(), e) - all.begin())];
    };
    auto name = [&](Executor e) {
      return e == Executor::auto_ ? "auto(" + to_string(plan.auto_choice()) + ")" : to_string(e);
    };

    const bool tty = isatty(2) && !json && rank == 0;
    for (Executor e : execs)
      for (int w = 0; w < warmup; ++w) plan.execute(s.cptr, d.ptr, e);
    // Interleaved in a new order each round, the slowest rank's time (bench/timing.hpp).
    std::vector<bench::Method> timed;
    for (Executor e : execs) timed.push_back({to_string(e), [&, e] { plan.execute(s.cptr, d.ptr, e); }, {}});
    bench::time_interleaved(timed, reps, MPI_COMM_WORLD, [&](int r) {
      if (tty) std::fprintf(stderr, "\rtiming: repetition %d/%d", r + 1, reps);
    });
    if (tty) std::fprintf(stderr, "\r%40s\r", "");

    std::vector<long long> wrong(execs.size(), 0), checked(execs.size(), 0);
    if (verify)
      for (size_t i = 0; i < execs.size(); ++i) {
        fill_pattern(pb.dst, rank, d.ptr, 2);
        plan.execute(s.cptr, d.ptr, execs[i]);
        CheckResult c = check_redistributed(pb.dst, rank, d.ptr, pb.region, pb.src, 1, 2);
        CheckResult cs = check_pattern(pb.src, rank, s.ptr, 1);
        if (!c.ok()) std::fprintf(stderr, "redist: %s: %s\n", to_string(execs[i]).c_str(), c.first_error.c_str());
        if (!cs.ok()) std::fprintf(stderr, "redist: %s: source changed: %s\n", to_string(execs[i]).c_str(), cs.first_error.c_str());
        long long v[2] = {c.wrong + cs.wrong, c.checked};
        MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        wrong[i] = v[0];
        checked[i] = v[1];
        if (wrong[i]) rc = 1;
      }

    RankRow row{st.bytes_sent, st.bytes_received, st.bytes_local, st.messages_sent, st.messages_received,
                st.segments_sent, st.segments_received, st.max_segments_per_tile};
    std::vector<RankRow> rows(static_cast<size_t>(size));
    MPI_Gather(&row, sizeof row, MPI_BYTE, rows.data(), sizeof row, MPI_BYTE, 0, MPI_COMM_WORLD);

    if (rank == 0) {
      long long remote = 0, local = 0, msgs = 0, segs = 0, maxseg = 0;
      for (const RankRow& r : rows)
        remote += r.sent, local += r.local, msgs += r.msgs_out, segs += r.segs_out, maxseg = std::max(maxseg, r.max_seg_tile);
      if (json) {
        std::printf("{\"ranks\": %d, \"src\": \"%s\", \"dst\": \"%s\", \"region\": \"%s\", ", size,
                    pb.src.spec().c_str(), pb.dst.spec().c_str(), pb.region.str().c_str());
        std::printf("\"plan_seconds\": %.6g, \"remote_bytes\": %lld, \"local_bytes\": %lld, "
                    "\"max_remote_bytes_per_rank\": %lld, \"messages\": %lld, \"segments\": %lld, "
                    "\"bnet\": %.6g, \"bmemcpy\": %.6g, \"bound\": %.6g, \"calibration\": \"%s\", "
                    "\"model_choice\": \"%s\", \"executors\": [",
                    plan_time, remote, local, mx[0], msgs, segs, bnet, machine.bmemcpy, bound,
                    machine.source.c_str(), to_string(model_choice).c_str());
        for (size_t i = 0; i < execs.size(); ++i) {
          const double med = timed[i].median(), mn = timed[i].min();
          const double bw = achieved_bandwidth(mx[0], med);
          std::printf("%s{\"name\": \"%s\", ", i ? ", " : "", to_string(execs[i]).c_str());
          if (execs[i] == Executor::auto_) std::printf("\"chose\": \"%s\", ", to_string(plan.auto_choice()).c_str());
          std::printf("\"median_s\": %.6g, \"min_s\": %.6g, \"predicted_s\": %.6g, \"bandwidth\": %.6g, "
                      "\"ratio_to_bound\": %.4g, \"verified\": %s, \"wrong\": %lld, \"times\": [",
                      med, mn, predicted(execs[i]), bw, bound > 0 ? bw / bound : 0,
                      verify ? (wrong[i] ? "false" : "true") : "null", wrong[i]);
          for (size_t k = 0; k < timed[i].times.size(); ++k) std::printf("%s%.6g", k ? ", " : "", timed[i].times[k]);
          std::printf("]}");
        }
        std::printf("], \"per_rank\": [");
        for (int r = 0; r < size; ++r)
          std::printf("%s{\"sent\": %lld, \"received\": %lld, \"local\": %lld, \"messages_out\": %lld, "
                      "\"messages_in\": %lld, \"segments_out\": %lld, \"segments_in\": %lld}",
                      r ? ", " : "", rows[r].sent, rows[r].received, rows[r].local, rows[r].msgs_out,
                      rows[r].msgs_in, rows[r].segs_out, rows[r].segs_in);
        std::printf("]}\n");
      } else {
        std::printf("redist run on %d ranks\n  source  %s\n  target  %s\n  region  %s (%s)\n", size,
                    pb.src.spec().c_str(), pb.dst.spec().c_str(), pb.region.str().c_str(),
                    human_bytes(pb.region.empty() ? 0.0 : double(pb.region.size.volume()) * pb.src.elem_size()).c_str());
        std::printf("plan     %s (slowest rank); remote %s, local %s; %lld messages, %lld segments, "
                    "<= %lld segments per target tile\n",
                    human_time(plan_time).c_str(), human_bytes(double(remote)).c_str(), human_bytes(double(local)).c_str(),
                    msgs, segs, maxseg);
        if (machine.source == "quick")
          std::printf("calibration quick, measured in this run (no file: `redist calibrate` saves one)\n");
        else
          std::printf("calibration %s (%s, %s)\n", machine.source.c_str(), machine.hostname.c_str(),
                      machine.created.c_str());
        if (bound > 0)
          std::printf("machine  Bnet %s (ping-pong, %s messages), Bmemcpy %s -> bound %s (paper 000 Eq. 5, "
                      "T_extra = 0)\n",
                      human_rate(bnet).c_str(), human_bytes(double(msg)).c_str(),
                      human_rate(machine.bmemcpy).c_str(), human_rate(bound).c_str());
        else
          std::printf("machine  no remote bytes (or 1 rank): the bound of Eq. 5 does not apply\n");
        std::printf("model    picks %s (smallest predicted time, paper 000 Eq. 1)\n", to_string(model_choice).c_str());
        std::printf("\n%-15s %12s %12s %12s %14s %9s  %s\n", "executor", "median", "min", "predicted", "bandwidth",
                    "of bound", verify ? "verified" : "");
        for (size_t i = 0; i < execs.size(); ++i) {
          const double med = timed[i].median(), mn = timed[i].min();
          const double bw = achieved_bandwidth(mx[0], med);
          char ratio[16] = "-";
          if (bound > 0) std::snprintf(ratio, sizeof ratio, "%.2f", bw / bound);
          std::string v = !verify ? "" : wrong[i] ? "FAILED (" + std::to_string(wrong[i]) + " wrong)"
                                                   : "ok (" + std::to_string(checked[i]) + " elements)";
          std::printf("%-15s %12s %12s %12s %14s %9s  %s\n", name(execs[i]).c_str(), human_time(med).c_str(),
                      human_time(mn).c_str(), human_time(predicted(execs[i])).c_str(), human_rate(bw).c_str(), ratio,
                      v.c_str());
        }
        std::printf("(median and min of %d interleaved repetitions after %d warm-up; bandwidth = paper 000 Eq. 3;\n"
                    " predicted = cost model, max over ranks, docs/executors.md)\n",
                    reps, warmup);
        std::printf("\n%5s %12s %12s %12s %9s %9s %10s %10s\n", "rank", "sent", "received", "local", "msgs out",
                    "msgs in", "segs out", "segs in");
        for (int r = 0; r < size && r < 64; ++r)
          std::printf("%5d %12s %12s %12s %9lld %9lld %10lld %10lld\n", r, human_bytes(double(rows[r].sent)).c_str(),
                      human_bytes(double(rows[r].received)).c_str(), human_bytes(double(rows[r].local)).c_str(),
                      rows[r].msgs_out, rows[r].msgs_in, rows[r].segs_out, rows[r].segs_in);
        if (size > 64) std::printf("  ... %d more ranks\n", size - 64);
      }
    }
    return rc;
  });
}

}  // namespace redist::cli
