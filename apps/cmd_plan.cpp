// `redist plan`: plans every rank of a simulated communicator without MPI
// (plan_rank is pure; under a launcher of several ranks MPI starts only to compare
// the command lines, and rank 0 plans) and prints the statistics, the heaviest
// peers and how long planning one rank took.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <new>
#include <cstdio>
#include <cstring>
#include <queue>

#include "cli.hpp"
#include "cost/model.hpp"
#include "exec/groups_union.hpp"
#include "exec/relay.hpp"
#include "plan_nodes.hpp"
#include "plan/schedule.hpp"
#include "redist/cost.hpp"
#include "redist/redist.hpp"

namespace redist::cli {
namespace {

const char* kUsage = R"(usage: redist plan SRC DST [REGION] [--ranks P] [options]

Plans the redistribution for P simulated ranks without MPI and prints the volume
moved (remote and local), messages, runs and segments per rank (a run is a
segment repeated at constant strides: the plan's entries), the memory a rank's
plan holds, segments per target tile, the heaviest peer pairs, and the time
planning one rank took. With
--predict, also the cost model's time for every strategy (max over the planned
ranks, as `auto` decides) from a calibration file (`redist calibrate`). Started
by mpirun on several ranks, rank 0 plans and prints, and the ranks' command lines
must be the same (as for `redist run`).

options:
  --ranks P         ranks of the simulated communicator (default: what the layouts
                    need; at most 2^23 = 8388608 unless --rank plans one of them)
  --rank R          plan only rank R and list its peers
  --top K           heaviest peer pairs to list (default 10)
  --predict         print the model's time per strategy and its pick
  --calibration F   machine figures for --predict (default: the `redist calibrate` file)
  --storage S       heap (default) or shared: where the arrays would live; a
                    strategy whose model depends on it predicts for that storage
                    (shm: shared windows, or rings in shared memory on the
                    heap), as auto does (docs/shm.md)
  --dot FILE        write the taskgraph strategy's task graph on P ranks (Init, Send,
                    Receive, Finish; unrolled: small cases only) as Graphviz DOT to FILE
                    (`dot -Tpng FILE -o graph.png`; docs/taskgraph.md); with --tg-chained,
                    --tg-batch N and --tg-grain G as in `redist run`
  --memory B        memory budget per rank (Options::max_buffer_bytes): each
                    strategy's buffers under it (phased, phased_sendrecv: pieces
                    of B/2), marking those that exceed it; auto picks among the rest
  --senders N       two process groups (docs/groups.md), as `redist run --senders`:
                    SRC on the first N of the P ranks, DST on the other P - N
                    (numbered 0 .. P-N-1 in their group); planned on the union
  --overlap         with --senders: DST on all P ranks (the first N also send)
  --ranks-per-node K  nodes of K consecutive ranks: a node's messages and bytes
                    with a message per rank pair and with `aggregate` (a few
                    messages per node pair, through lane ranks; docs/shm.md),
                    with --predict the model's time of both (the node of --rank,
                    else the largest figure of any node; the lanes need every
                    rank's plan, also with --rank); the strategies' models
                    then take these nodes too (shm: peers on other nodes by
                    messages, as p2p)

Always printed: each strategy's buffers beyond source and target (max over the
planned ranks; shm's follow --storage and --ranks-per-node, beside what a budget
counts for it), and the rounds of `phased` (an edge colouring of the
sender/receiver graph: in each round a rank sends at most one message and
receives at most one) with the largest round's volume. When the layouts are
paper 001's case (1-D block-cyclic r -> K*r or K*r -> r, 2 <= K <= P: `phased`
then runs the paper's optimal schedule), its Fig. 13 variants (synchronized
simple, random and optimal, sendrecv, unsynchronized): rounds, most messages a
rank receives in one round, largest volume received in one round, and with a
calibration the model's time (docs/strategies.md, "phased"). Planning every
rank, also paper 002's algorithms (p2p and the forwarding strategies: their
routes over the block list of all ranks, as their first run computes them):
steps, messages and volume in all and on the busiest rank each way, and their
buffers (docs/groups.md).
  --help            this text

With a greedy or balanced placement as DST (docs/spec.md), also the placement's
figures over all ranks: patches, data moved, patches per rank and imbalance.

example:
  redist plan "65536x65536 tile=512x512 block_cyclic grid=64x64" \
              "65536x65536 tile=384x384 block_cyclic grid=32x128" --ranks 4096
)";

// Paper 001's Fig. 13 variants on a plan that is its case (schedule::paper_rounds):
// per variant its rounds, the busiest rank's most messages received in one round
// (contention: 1 is contention free), the largest volume a rank receives in one
// round, and with a machine the model's time: a rank's messages of a round go
// one after another (Machine::net_time each, its receives or its sends, whichever
// take longer), a synchronized round lasts as its busiest rank plus one startup
// (the wait for the partner); unsynchronized is one round of every message.
void print_paper_variants(const Layout& src, const Layout& dst, int P, const std::vector<std::pair<int, int>>& edges,
                          const std::vector<long long>& edge_bytes, const Machine* m) {
  const index_t r1 = src.partition(0).tile(), r2 = dst.partition(0).tile();
  const int K = static_cast<int>(std::max(r1, r2) / std::min(r1, r2));
  std::map<std::pair<int, int>, long long> bytes;
  for (size_t i = 0; i < edges.size(); ++i) bytes[edges[i]] = edge_bytes[i];
  auto of = [&](const schedule::Move& mv) {
    const auto it = bytes.find({mv.src_rank, mv.dst_rank});
    return mv.src_rank == mv.dst_rank || it == bytes.end() ? 0LL : it->second;
  };
  std::printf("\npaper 001  the paper's case: block size %lld -> %lld, K = %d on P = %d (Fig. 13 variants%s)\n",
              (long long)r1, (long long)r2, K, P, m ? "; model: docs/strategies.md, \"phased\"" : "");
  std::printf("  %-22s %6s %16s %18s %12s\n", "variant", "rounds", "max msgs in/round", "largest round in", m ? "model" : "");
  auto row = [&](const char* name, const schedule::Schedule& s, bool sync) {
    int most = 0;
    long long largest = 0;
    double t = 0;
    std::vector<long long> in(static_cast<size_t>(P)), total_in(static_cast<size_t>(P));
    std::vector<double> tin(static_cast<size_t>(P)), tout(static_cast<size_t>(P)), all_in(static_cast<size_t>(P)),
        all_out(static_cast<size_t>(P));
    std::vector<int> msgs(static_cast<size_t>(P)), all_msgs(static_cast<size_t>(P));
    for (const schedule::Phase& ph : s) {
      std::fill(in.begin(), in.end(), 0), std::fill(msgs.begin(), msgs.end(), 0);
      std::fill(tin.begin(), tin.end(), 0.0), std::fill(tout.begin(), tout.end(), 0.0);
      // A pair with several blocks of a superblock (P < K) moves them all in its first phase.
      for (const schedule::Move& mv : ph)
        if (const long long b = of(mv); b > 0) {
          const double tm = m ? m->net_time(double(b)) : 0.0;
          in[mv.dst_rank] += b, ++msgs[mv.dst_rank], tin[mv.dst_rank] += tm, tout[mv.src_rank] += tm;
          bytes[{mv.src_rank, mv.dst_rank}] = -b;  // taken
        }
      double round = 0;
      for (int q = 0; q < P; ++q) {
        total_in[q] += in[q], all_msgs[q] += msgs[q], all_in[q] += tin[q], all_out[q] += tout[q];
        if (sync) most = std::max(most, msgs[q]), largest = std::max(largest, in[q]);
        round = std::max({round, tin[q], tout[q]});
      }
      if (m && sync) t += round + m->startup;
    }
    for (auto& [k, v] : bytes) v = std::abs(v);  // untaken again, for the next variant
    if (!sync)  // one round: every message in flight at once
      for (int q = 0; q < P; ++q)
        most = std::max(most, all_msgs[q]), largest = std::max(largest, total_in[q]),
        t = std::max({t, all_in[q], all_out[q]});
    std::printf("  %-22s %6zu %16d %18s %12s\n", name, sync ? s.size() : size_t{1}, most,
                human_bytes(double(largest)).c_str(), m ? human_time(t).c_str() : "");
  };
  const bool shrink = r1 > r2;
  auto dir = [&](schedule::Schedule s) { return shrink ? schedule::reverse(s) : s; };
  row("synchronized simple", dir(schedule::expand_simple(P, K)), true);
  row("synchronized random", dir(schedule::expand_random(P, K, 1)), true);
  // K > P: one message per pair, every pair: the closed form of paper_rounds (shift_rounds).
  schedule::Schedule optimal;
  if (K <= P) {
    optimal = dir(schedule::expand_optimal(P, K));
  } else {
    for (const auto& ph : schedule::shift_rounds(P)) {
      schedule::Phase f;
      for (auto [a, b] : ph) f.push_back({a, 0, b, 0});
      optimal.push_back(f);
    }
  }
  row(K <= P ? "synchronized optimal" : "synchronized shift", optimal, true);
  row("sendrecv (optimal)", optimal, true);
  row("unsynchronized", optimal, false);
}

struct Pair {
  long long bytes;
  int from, to;
  bool operator>(const Pair& o) const { return bytes > o.bytes; }
};

}  // namespace

namespace {
int plan_alone(int argc, char** argv);
}  // namespace

int cmd_plan(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  // Planning needs no MPI, but a launcher's other ranks may (`mpirun -np 1 redist
  // run .. : -np 1 redist plan ..` hung in run's MPI_Init or crashed: a helper's
  // trial). With several ranks, start MPI so that the command lines are compared
  // (run_with_mpi) and every rank ends together; rank 0 alone plans and prints.
  if (launch_size() > 1)
    return run_with_mpi(argc, argv, "plan", [&](int rank, int) {
      int rc = rank == 0 ? plan_alone(argc, argv) : 0;
      MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
      return rc;
    });
  return plan_alone(argc, argv);
}

namespace {
int plan_alone(int argc, char** argv) {
  bool one_rank = false;  // --rank given: the out-of-memory advice leaves it out
  try {
    const Args a = parse_args(argc, argv, 2,
                              {"--ranks", "--rank", "--top", "--calibration", "--memory", "--dot", "--tg-batch",
                               "--tg-grain", "--storage", "--senders", "--ranks-per-node"},
                              {"--help", "--predict", "--tg-chained", "--overlap"});
    const long long budget = a.get_int("--memory", 0, 1);
    const std::string storage = storage_option(a, "heap");
    Problem pb = parse_problem(a, kUsage);
    const bool overlap = a.has("--overlap");
    const int S = static_cast<int>(a.get_int("--senders", 0, 1, INT_MAX));
    if (overlap && S == 0) detail::fail("--overlap needs --senders N");
    auto check_layouts = [&pb, S](int src_ranks, int dst_ranks) {
      // With --senders the layouts live in their groups: say which.
      const char* in_src = S > 0 && src_ranks != INT_MAX ? " (in the group of --senders)" : "";
      const char* in_dst = S > 0 && dst_ranks != INT_MAX ? " (in the receivers' group)" : "";
      std::string err = pb.src.check(src_ranks);
      if (!err.empty()) detail::fail("source layout", in_src, ": ", err);
      err = pb.dst.check(dst_ranks);
      if (!err.empty()) detail::fail("target layout", in_dst, ": ", err);
    };
    // The layouts' own values first (any communicator size), so that the rank
    // count derived from them is meaningful; then against --ranks.
    check_layouts(INT_MAX, INT_MAX);
    const int src_need = pb.src.ownership().ranks_needed(), dst_need = pb.dst.ownership().ranks_needed();
    const int need = S == 0 ? std::max(src_need, dst_need) : overlap ? std::max(S, dst_need) : S + dst_need;
    // Each simulated rank keeps its figures (about 340 bytes: `redist plan 100x100
    // 100x100 --ranks 1000000` took 342 MB and 2.6 s, 2^23 ranks 2.8 GB and 33 s):
    // --ranks 2000000000 planned until memory ran out (a helper's trial). 2^23 is
    // more ranks than the largest machines run (Fugaku: 7.6 million cores). One
    // rank of more (--rank R) keeps no per-rank figures: any int.
    constexpr long long kMaxAll = 1LL << 23;
    const int P = static_cast<int>(a.get_int("--ranks", need, 1, INT_MAX));
    if (!a.has("--rank") && P > kMaxAll) {
      if (!a.has("--ranks"))
        detail::fail("the layouts need ", need, " ranks; redist plan simulates at most 2^23 (", kMaxAll,
                     ") when it plans them all: plan one of them with --rank R, or give layouts of fewer ranks");
      detail::fail("option --ranks needs an integer >= 1 and <= ", kMaxAll, " when every rank is planned, got '",
                   a.get("--ranks", ""), "' (plan one rank of more with --rank R)");
    }
    if (S > P) detail::fail("--senders ", S, " is more than --ranks ", P, ": the senders are among the ranks");
    if (S > (overlap ? P : P - 1))
      detail::fail("--senders ", S, " leaves no receivers among --ranks ", P, overlap ? "" : " (give --overlap or more ranks)");
    const int R = S == 0 ? P : overlap ? P : P - S;
    check_layouts(S == 0 ? P : S, R);
    // Two groups: the plan of their union, as make_group_plan makes it (union rank
    // s is sender s; receiver j is union rank j, or S + j when disjoint).
    const detail::RelayGroups groups = detail::union_groups(P, S, overlap);
    const std::string dst_spec = pb.dst.spec();  // printed as given (in its group's ranks)
    if (S > 0) pb.dst = detail::renumber_to_union(pb.dst, groups.receivers, P, dst_spec);
    std::string err;
    if (pb.src.elem_size() != pb.dst.elem_size())
      detail::fail("element size mismatch: source esize=", pb.src.elem_size(), ", target esize=", pb.dst.elem_size());
    err = pb.region.check(pb.src.shape(), pb.dst.shape());
    if (!err.empty()) detail::fail(err);
    // An explicit ld= must hold every rank's local rows (LocalIndex says so): checked
    // here for every simulated rank, before anything is printed (it was found by
    // the first rank's plan, after the header).
    for (const auto& [l, side] : {std::pair{&pb.src, "source"}, std::pair{&pb.dst, "target"}})
      if (l->storage().kind == StorageKind::local_array && l->storage().ld > 0)
        for (int r = 0; r < P; ++r) {
          try {
            LocalIndex(*l, r);
          } catch (const Error& e) {
            // With --senders the target is renumbered to union ranks: name both.
            const auto j = std::find(groups.receivers.begin(), groups.receivers.end(), r) - groups.receivers.begin();
            if (S > 0 && l == &pb.dst)
              detail::fail(side, " layout (in the receivers' group: its rank ", j, " is union rank ", r,
                           " of --ranks): ", e.what());
            detail::fail(side, " layout: ", e.what());
          }
        }
    // The task graph's options, read (and refused when wrong) whether or not --dot
    // is given: `--tg-grain 0` passed silently without it (a helper's trial).
    TaskgraphOptions tg;
    tg.batch = a.get("--tg-batch", "auto") == "auto" ? TaskgraphOptions::kBatchAuto : a.get_int("--tg-batch", 0, 0);
    tg.isolate_segments = !a.has("--tg-chained");
    tg.grain = a.get("--tg-grain", "auto") == "auto" ? TaskgraphOptions::kGrainAuto : a.get_int("--tg-grain", 1, 1);
    for (const char* o : {"--tg-batch", "--tg-grain", "--tg-chained"})
      if (a.has(o) && !a.has("--dot"))
        detail::fail("option ", o, " shapes the task graph that --dot FILE writes: give --dot FILE too, or leave ", o,
                     " out");
    if (a.has("--dot")) {
      const std::string dot = taskgraph_dot(pb.src, pb.dst, pb.region, P, tg);
      const std::string file = a.get("--dot", "");
      std::FILE* f = std::fopen(file.c_str(), "w");
      if (!f) detail::fail("--dot: cannot write ", file);
      std::fputs(dot.c_str(), f);
      std::fclose(f);
      std::printf("task graph: %s\n", file.c_str());
    }
    const int top = static_cast<int>(a.get_int("--top", 10, 0, INT_MAX));
    const int only = static_cast<int>(a.get_int("--rank", -1, 0, INT_MAX));
    one_rank = only >= 0;
    if (only >= P) detail::fail("--rank ", only, " must be < --ranks ", P);
    const bool predict_times = a.has("--predict") || a.has("--calibration");
    Machine machine;
    const std::string cal = a.get("--calibration", default_calibration_path());
    std::string why;
    if (predict_times && !load_machine(cal, machine, &why))
      detail::fail(a.has("--predict") ? "--predict" : "--calibration (it implies --predict)",
                   " needs machine figures: ", why, " (", calibration_hint(cal), ")");
    const std::vector<std::string> names = strategy_names();
    // Nodes of --ranks-per-node K consecutive ranks for the models that depend on
    // them (shm: peers on other nodes by messages); without it, one node.
    const int per_node = a.has("--ranks-per-node") ? static_cast<int>(a.get_int("--ranks-per-node", 1, 1, P)) : 0;
    std::vector<int> node_of;
    if (per_node > 0)
      for (int r = 0; r < P; ++r) node_of.push_back(r / per_node);
    std::vector<double> predicted(names.size(), 0);
    // extra: what a budget counts (Plan's, auto's); here: with this storage and
    // these nodes (shm: rings or nothing on the node, messages off it).
    std::vector<long long> extra(names.size(), 0), here(names.size(), 0);
    std::vector<double> pack_seconds(only < 0 ? static_cast<size_t>(P) : 0);  // the relay models' packing, per rank
    std::vector<std::pair<int, int>> edges;  // the sender/receiver graph (phased's rounds)
    std::vector<long long> edge_bytes;

    std::printf("redist plan for %s\n  source  %s\n  target  %s\n  region  %s\n",
                counted(P, "simulated rank", "simulated ranks").c_str(), pb.src.spec().c_str(), dst_spec.c_str(),
                pb.region.str().c_str());
    if (S > 0)
      std::printf("  groups  %s (union ranks 0 .. %d) -> %s (union ranks %d .. %d)%s\n",
                  counted(S, "sender", "senders").c_str(), S - 1, counted(R, "receiver", "receivers").c_str(), P - R,
                  P - 1, overlap ? ", overlapping" : "");
    long long remote = 0, received = 0, local = 0, msgs = 0, msgs_in = 0, segs = 0, runs = 0, max_seg_tile = 0,
              tiles = 0, seg_tile_sum = 0;
    long long plan_bytes = 0;
    long long max_sent = 0, max_recv = 0, max_msgs = 0;
    int arg_sent = 0, arg_recv = 0, arg_msgs = 0;
    double tmax = 0, tsum = 0;
    std::priority_queue<Pair, std::vector<Pair>, std::greater<Pair>> heavy;  // min-heap of the top K
    const int first = only >= 0 ? only : 0, last = only >= 0 ? only + 1 : P;
    Progress progress("redist plan: planning ranks", last - first);
    for (int r = first; r < last; ++r) {
      progress.at(r - first);
      const auto t0 = std::chrono::steady_clock::now();
      RankPlan rp = plan_rank(pb.src, pb.dst, pb.region, r, P);
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      tmax = std::max(tmax, dt);
      tsum += dt;
      const PlanStats& s = rp.stats;
      if (predict_times)
        for (size_t e = 0; e < names.size(); ++e)
          predicted[e] =
              std::max(predicted[e], predict(rp, names[e], machine, storage == "heap", node_of, budget).total());
      for (size_t e = 0; e < names.size(); ++e) {
        extra[e] = std::max<long long>(extra[e], extra_memory(rp, names[e], budget));
        here[e] = std::max<long long>(here[e], extra_memory(rp, names[e], budget, storage == "heap", node_of));
      }
      for (const PeerPlan& pp : rp.sends) edges.push_back({r, pp.peer}), edge_bytes.push_back(pp.bytes);
      if (predict_times && only < 0)
        pack_seconds[static_cast<size_t>(r)] = detail::packed_copy_time(rp, detail::rates(rp, machine, true));
      remote += s.bytes_sent;
      local += s.bytes_local;
      msgs += s.messages_sent;
      msgs_in += s.messages_received;
      received += s.bytes_received;
      segs += s.segments_sent + s.local_copies;
      runs += s.runs_sent + s.local_runs;
      plan_bytes = std::max<long long>(plan_bytes, s.plan_bytes);
      tiles += s.target_tiles;
      seg_tile_sum += s.segments_per_tile_total;
      max_seg_tile = std::max<long long>(max_seg_tile, s.max_segments_per_tile);
      if (s.bytes_sent > max_sent) max_sent = s.bytes_sent, arg_sent = r;
      if (s.bytes_received > max_recv) max_recv = s.bytes_received, arg_recv = r;
      if (s.messages_sent + s.messages_received > max_msgs) max_msgs = s.messages_sent + s.messages_received, arg_msgs = r;
      for (const PeerPlan& pp : rp.sends) {
        heavy.push({pp.bytes, r, pp.peer});
        if (static_cast<int>(heavy.size()) > top) heavy.pop();
      }
      if (only >= 0) {
        std::printf("\nrank %d: sends %s in %lld messages (%lld runs, %lld segments), receives %s in %lld messages "
                    "(%lld runs, %lld segments), copies %s locally (%lld runs, %lld pieces); plan %s\n",
                    r, human_bytes(double(s.bytes_sent)).c_str(), (long long)s.messages_sent, (long long)s.runs_sent,
                    (long long)s.segments_sent, human_bytes(double(s.bytes_received)).c_str(),
                    (long long)s.messages_received, (long long)s.runs_received, (long long)s.segments_received,
                    human_bytes(double(s.bytes_local)).c_str(), (long long)s.local_runs, (long long)s.local_copies,
                    human_bytes(double(s.plan_bytes)).c_str());
        auto segments = [](const PeerPlan& pp) {
          index_t n = 0;
          for (const Segment& g : pp.segments) n += g.segments();
          return static_cast<long long>(n);
        };
        for (const PeerPlan& pp : rp.sends)
          std::printf("  -> %-6d %12s %8zu runs %10lld segments\n", pp.peer, human_bytes(double(pp.bytes)).c_str(),
                      pp.segments.size(), segments(pp));
        for (const PeerPlan& pp : rp.receives)
          std::printf("  <- %-6d %12s %8zu runs %10lld segments\n", pp.peer, human_bytes(double(pp.bytes)).c_str(),
                      pp.segments.size(), segments(pp));
      }
    }
    progress.finish();
    std::vector<detail::RouteCounts> routes;  // paper 002's algorithms (they need the whole graph)
    double route_seconds = 0;
    if (only < 0) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<detail::RelayBlock> blocks;
      for (size_t i = 0; i < edges.size(); ++i) blocks.push_back({edges[i].first, edges[i].second, edge_bytes[i]});
      routes = detail::relay_counts(blocks, groups, predict_times ? &machine : nullptr);
      route_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const detail::RouteCounts& rc : routes) {  // exact buffers: the slots of the routes
        const auto e = std::find(names.begin(), names.end(), rc.strategy) - names.begin();
        if (rc.strategy == "p2p") continue;
        extra[static_cast<size_t>(e)] = 0;
        for (const detail::RelayCounts& c : rc.ranks) extra[static_cast<size_t>(e)] = std::max<long long>(extra[static_cast<size_t>(e)], c.buffer_bytes);
        here[static_cast<size_t>(e)] = extra[static_cast<size_t>(e)];  // the routes' slots, whatever the storage
      }
    }
    const int planned = last - first;
    if (only >= 0)  // one rank: what it sends and what it receives differ
      std::printf("\nvolume    sent %s, received %s, local %s (this rank)\n", human_bytes(double(remote)).c_str(),
                  human_bytes(double(received)).c_str(), human_bytes(double(local)).c_str());
    else
      std::printf("\nvolume    remote %s, local %s\n", human_bytes(double(remote)).c_str(), human_bytes(double(local)).c_str());
    std::printf("per rank  max sent %s (rank %d), max received %s (rank %d), max messages in+out %lld (rank %d)\n",
                human_bytes(double(max_sent)).c_str(), arg_sent, human_bytes(double(max_recv)).c_str(), arg_recv,
                max_msgs, arg_msgs);
    if (only >= 0)
      std::printf("messages  %lld sent, %lld received; runs %lld, segments %lld (sent + local, this rank)\n", msgs,
                  msgs_in, runs, segs);
    else
      std::printf("messages  %lld, runs %lld, segments %lld (remote + local)\n", msgs, runs, segs);
    std::printf("memory    %s of plan on the largest rank\n", human_bytes(double(plan_bytes)).c_str());
    std::printf("tiles     %lld target tiles touched, segments per target tile: mean %.2f, max %lld\n", tiles,
                tiles ? double(seg_tile_sum) / double(tiles) : 0.0, max_seg_tile);
    std::printf("planning  one rank: mean %s, max %s; %s in %s (one core, no MPI)\n",
                human_time(tsum / planned).c_str(), human_time(tmax).c_str(),
                counted(planned, "rank", "ranks").c_str(), human_time(tsum).c_str());
    std::printf("\nbuffers   beyond source and target, max over %s%s\n", counted(planned, "rank", "ranks").c_str(),
                budget > 0 ? (", budget " + human_bytes(double(budget))).c_str() : "");
    for (size_t e = 0; e < names.size(); ++e)
      std::printf("  %-16s %12s%s%s\n", names[e].c_str(), human_bytes(double(here[e])).c_str(),
                  here[e] != extra[e]
                      ? detail::cat("  (", storage == "heap" ? "rings in /dev/shm" : "shared windows",
                            per_node > 0 ? ", messages to other nodes" : "", "; a budget counts ",
                            human_bytes(double(extra[e])), ": messages wherever they fail)")
                            .c_str()
                      : "",
                  budget > 0 && extra[e] > budget ? "  over the budget" : "");
    if (only < 0) {  // paper 002's algorithms: messages and volume per rank
      std::printf("\npaper 002 algorithms on %s -> %s (%s; routes of every rank in %s)\n",
                  counted(static_cast<long long>(groups.senders.size()), "sender", "senders").c_str(),
                  counted(static_cast<long long>(groups.receivers.size()), "receiver", "receivers").c_str(),
                  counted(static_cast<long long>(edges.size()), "block", "blocks").c_str(),
                  human_time(route_seconds).c_str());
      std::printf("  %-12s %6s %10s %8s %8s %12s %12s %12s %12s\n", "strategy", "steps", "messages", "max out", "max in",
                  "volume", "max out", "max in", "buffers");
      for (const detail::RouteCounts& rc : routes) {
        long long m = 0, v = 0, mo = 0, mi = 0, vo = 0, vi = 0, buf = 0;
        for (const detail::RelayCounts& c : rc.ranks)
          m += c.messages_sent, v += c.bytes_sent, mo = std::max<long long>(mo, c.messages_sent),
          mi = std::max<long long>(mi, c.messages_received), vo = std::max<long long>(vo, c.bytes_sent),
          vi = std::max<long long>(vi, c.bytes_received), buf = std::max<long long>(buf, c.buffer_bytes);
        std::printf("  %-12.*s %6d %10lld %8lld %8lld %12s %12s %12s %12s\n", static_cast<int>(rc.strategy.size()),
                    rc.strategy.data(), rc.steps, m, mo, mi, human_bytes(double(v)).c_str(), human_bytes(double(vo)).c_str(),
                    human_bytes(double(vi)).c_str(), human_bytes(double(buf)).c_str());
      }
    }
    if (only < 0) {  // phased's rounds need the whole graph
      const std::vector<int> colour = schedule::colour_edges(P, P, edges);
      const int rounds = schedule::max_degree(P, P, edges);
      std::vector<long long> vol(static_cast<size_t>(rounds), 0), big(static_cast<size_t>(rounds), 0);
      for (size_t i = 0; i < edges.size(); ++i)
        vol[colour[i]] += edge_bytes[i], big[colour[i]] = std::max(big[colour[i]], edge_bytes[i]);
      const size_t r = static_cast<size_t>(std::max_element(vol.begin(), vol.end()) - vol.begin());
      std::printf("phased    %s (the most peers of a rank); largest round %s in all, its largest message %s\n",
                  counted(rounds, "round", "rounds").c_str(), rounds ? human_bytes(double(vol[r])).c_str() : "0 B",
                  rounds ? human_bytes(double(big[r])).c_str() : "0 B");
      if (!schedule::paper_rounds(pb.src, pb.dst, pb.region, P).empty())
        print_paper_variants(pb.src, pb.dst, P, edges, edge_bytes, predict_times ? &machine : nullptr);
    }
    if (a.has("--ranks-per-node"))
      print_node_traffic(pb.src, pb.dst, pb.region, P, per_node, only, predict_times ? &machine : nullptr,
                         only < 0 ? &edges : nullptr, only < 0 ? &edge_bytes : nullptr);
    std::vector<char> by_routes(names.size(), 0);  // the relay strategies' time from their routes
    if (predict_times) {
      // A relay strategy's model per rank sees that rank's own blocks only: a hub that
      // forwards everything (centralized) came out ~1,400x too fast at 4096 ranks.
      // With every rank planned, each rank's schedule of the routes gives the model
      // make_plan's collective one computes (Relay::predict_schedule): per step the
      // larger of its sends' and receives' exchange times, plus its packing and the
      // bytes it forwards at memcpy's rate.
      for (const detail::RouteCounts& rc : routes) {
        if (rc.strategy == "p2p") continue;
        const auto e = static_cast<size_t>(std::find(names.begin(), names.end(), rc.strategy) - names.begin());
        if (e == names.size()) continue;
        double most = 0;
        for (size_t r = 0; r < rc.ranks.size(); ++r) {
          const detail::RelayCounts& c = rc.ranks[r];
          const double forward = machine.bmemcpy > 0 ? double(c.forwarded_bytes) / machine.bmemcpy : 0;
          most = std::max(most, c.comm_seconds + pack_seconds[r] + forward);
        }
        predicted[e] = most, by_routes[e] = 1;
      }
    }
    if (predict_times) {
      std::printf("\nmodel     (%s, max over %s; docs/strategies.md)\n", cal.c_str(),
                  counted(planned, "rank", "ranks").c_str());
      std::vector<double> t = predicted;
      const auto& info = strategies();
      for (size_t e = 0; e < names.size(); ++e)
        if (budget > 0 && extra[e] > budget) t[e] = std::numeric_limits<double>::infinity();
      const size_t pick = static_cast<size_t>(std::min_element(t.begin(), t.end()) - t.begin());
      for (size_t e = 0; e < names.size(); ++e) {
        const std::string& cond = info[e].model_condition;
        const std::string note = by_routes[e] ? "  (from every rank's schedule of the routes)"
                                 : only >= 0 && detail::registry()[e].route
                                     ? "  (this rank's own blocks only: rough where a rank forwards others')"
                                 : cond.empty()          ? ""
                                 : storage != "heap"   ? "  (for " + cond + ")"
                                 : info[e].heap_model.empty() ? "  (needs " + cond + ")"
                                                             : "  (on the heap: " + info[e].heap_model + ")";
        std::printf("  %-16s %12s%s%s\n", names[e].c_str(),
                    std::isfinite(predicted[e]) ? human_time(predicted[e]).c_str() : "-",
                    e == pick && std::isfinite(t[e]) ? "  <- auto" : "", note.c_str());
      }
    }
    if (pb.dst.ownership().kind() == Ownership::Kind::placement) {
      // Paper 003's figures over all ranks (the placement is global: computed once).
      const PlacementSummary ps = placement_summary(pb.dst);
      const auto [lo, hi] = std::minmax_element(ps.load.begin(), ps.load.end());
      const auto ehi = std::max_element(ps.load_elements.begin(), ps.load_elements.end());
      const double mean = double(ps.patches) / double(ps.load.size());
      const double emean = double(ps.total_elements) / double(ps.load.size());
      std::printf("\nplacement %lld patches (%lld shared), moved %s of %s (%.2f%%, all ranks); "
                  "patches per rank min %lld max %lld mean %.2f, imbalance (max/mean) %.3f patches, %.3f elements\n",
                  (long long)ps.patches, (long long)ps.shared_patches,
                  human_bytes(double(ps.moved_elements) * double(pb.dst.elem_size())).c_str(),
                  human_bytes(double(ps.total_elements) * double(pb.dst.elem_size())).c_str(),
                  ps.total_elements ? 100.0 * double(ps.moved_elements) / double(ps.total_elements) : 0.0,
                  (long long)*lo, (long long)*hi, mean, mean > 0 ? double(*hi) / mean : 0.0,
                  emean > 0 ? double(*ehi) / emean : 0.0);
    }
    std::vector<Pair> list;
    while (!heavy.empty()) list.push_back(heavy.top()), heavy.pop();
    std::reverse(list.begin(), list.end());
    if (!list.empty()) {
      std::printf("\nheaviest peer pairs\n");
      for (const Pair& p : list)
        std::printf("  %6d -> %-6d %12s\n", p.from, p.to, human_bytes(double(p.bytes)).c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "redist plan: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "redist plan: error: out of memory: this case's plans or layouts do not fit in this process (%s)\n",
                 one_rank ? "fewer --ranks, or fewer tiles"
                          : "plan one rank with --rank R, fewer --ranks, or fewer tiles");
    return 2;
  }
  return 0;
}
}  // namespace

}  // namespace redist::cli
