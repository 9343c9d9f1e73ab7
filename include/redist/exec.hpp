// Layer `exec`: make a Plan once (collective validation + planning), execute it
// many times with any strategy. Strategies are found by name in one registry
// (docs/strategies.md); "auto" picks the one the cost model predicts fastest.
//
//   redist::Layout src = redist::Layout::parse("8000x8000 tile=400x400 block_cyclic grid=1x2");
//   redist::Layout dst = redist::Layout::parse("8000x8000 tile=300x300 block_cyclic grid=2x1");
//   redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), MPI_COMM_WORLD);
//   plan.execute(src_buffer, dst_buffer);   // as often as needed, allocates nothing after the first
#pragma once

#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redist/cost.hpp"
#include "redist/element.hpp"
#include "redist/error.hpp"
#include "redist/layout.hpp"
#include "redist/plan.hpp"

namespace redist {

// ------------------------------------------------------------------ strategies
// A strategy is one way of moving a plan's data (p2p, segment, alltoallv,
// alltoallw, direct, ...). `auto` is not one: it names the strategy with the
// smallest predicted time, chosen collectively on a plan's first auto execute.
struct StrategyInfo {
  std::string name;         // as on the command line: "p2p"
  std::string summary;      // one line for --help
  bool arithmetic = false;  // applies Options::arithmetic (alpha, beta, conjugate)
  // When its cost model holds (empty: always; shm: "arrays in shared windows").
  std::string model_condition;
  // Its model for arrays on the heap, where model_condition fails, in words (shm:
  // rings in shared memory, packed and unpacked); empty with a model_condition: none, and auto
  // and `redist plan` leave it out for heap arrays.
  std::string heap_model;
};
// The strategies that apply Options::arithmetic, ", "-joined (for messages).
std::string arithmetic_strategies();
// Every strategy, in the registry's order (what `all`, --help, the conformance
// suite and the benchmarks iterate); without auto.
const std::vector<StrategyInfo>& strategies();
std::vector<std::string> strategy_names();
inline constexpr std::string_view kAuto = "auto";
// Throws redist::Error naming the allowed names unless `name` is a strategy or "auto".
void check_strategy(std::string_view name);
// This rank's predicted time for one execute of `strategy` (paper 000 Eq. 1; no
// MPI). The plan's time is the max over ranks (Eq. 2). `heap`: the arrays live on
// the heap, not in shared windows (StrategyInfo::heap_model; infinity for a
// strategy with a model_condition and no heap model). Throws for an unknown name
// or "auto".
Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap = false);
// The same with the ranks' nodes: node_of[r] names rank r's node (any id, the same
// for every rank of one node), one entry per rank of the plan; empty: every rank
// on this rank's node (what the overload above assumes). A strategy whose model
// depends on nodes (shm: peers on other nodes by messages) uses it, the others
// ignore it. Plan::predictions passes the plan's nodes (Options::node_size,
// $REDIST_NODE_SIZE, else MPI_COMM_TYPE_SHARED), `redist plan --ranks-per-node K`
// nodes of K consecutive ranks. Throws when node_of is neither empty nor one
// entry per rank of the plan's peers.
Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap,
                   std::span<const int> node_of);
// The same under a memory budget (Options::max_buffer_bytes; 0: none): the
// strategies that move in smaller pieces under it (`phased`, `phased_sendrecv`,
// `p2p_pipelined`) predict those pieces' messages. `redist plan --memory B
// --predict` and Plan::predictions use it.
Prediction predict(const RankPlan& rp, std::string_view strategy, const Machine& m, bool heap,
                   std::span<const int> node_of, index_t max_buffer_bytes);
// The bytes `strategy` allocates on this rank for its data buffers beyond the
// source and target (packed messages; no MPI): the plan's whole volume sent and
// received for the strategies that pack everything at once, less the messages
// that are one run of storage for `p2p` and `phased_unsync` (segments for
// `segment`), which move in place; one message each way for `phased` (the
// largest that is not one run), 0 for `alltoallw`. Without
// Options::arithmetic (the overload with Options below sees it: received
// messages are then all unpacked). With a budget (`max_buffer_bytes`, as
// Options; 0: none) what the strategy allocates under it: `phased` and
// `phased_sendrecv` then send each message as pieces of half the budget
// (whole elements), so they need at most the budget once it holds two
// elements. Throws for an unknown name or "auto".
index_t extra_memory(const RankPlan& rp, std::string_view strategy, index_t max_buffer_bytes = 0);
// The same where the storage and the nodes decide (node_of as for predict; empty:
// every rank on this rank's node). shm: no buffer for its peers on the node
// through shared windows; on the heap (`heap`) the rings this rank maps in
// /dev/shm, one per sender on the node (4 slots of up to 64 KB); the whole volume
// each way in packed messages only when a peer of that side is on another node
// (or the rings are off: cma packs short rows). The overload above counts shm's
// messages always: a plan's budget (Options::max_buffer_bytes) uses that one.
// The other strategies: the overload above. Throws as predict does.
index_t extra_memory(const RankPlan& rp, std::string_view strategy, index_t max_buffer_bytes, bool heap,
                     std::span<const int> node_of);

// --------------------------------------------------------------------- options
// The `taskgraph` strategy's switches (paper 000, sec. 6.2; docs/taskgraph.md):
// each optimization of the paper on its own, so that its effect can be measured.
struct TaskgraphOptions {
  static constexpr index_t kBatchAuto = -1;
  static constexpr index_t kGrainAuto = -1;
  int threads = 1;  // worker threads per rank (the runtime's Options::threads)
  // Control dependencies that let the Send tasks of at most `batch` target tile
  // columns (last dimension) per tile row be exposed at once: 0 none, kBatchAuto
  // (default) the paper's choice (lcm(Qs*SNBs, Qt*SNBt) for two block-cyclic
  // layouts, else min(target tile columns, ranks)).
  index_t batch = kBatchAuto;
  // Receive tasks of one target tile run in parallel, joined by Finish; off: they
  // run one after another (a chain through the tile).
  bool isolate_segments = true;
  // Send only the segment's bytes; off: the whole source tile travels.
  bool dynamic_volume = true;
  // Workers post their own activation messages (MPI_THREAD_MULTIPLE needed; without
  // it the strategy falls back to the funneled mode); off: the communication thread
  // posts every message.
  bool multiple_send = true;
  // A communication thread per rank progresses MPI beside the workers (paper 004
  // sec. III-C); off (default): the workers progress it between tasks and while
  // idle (the runtime's CommMode::workers; with several workers it needs
  // MPI_THREAD_MULTIPLE, else the thread is used). multiple_send off needs it.
  bool comm_thread = false;
  // Payloads up to this many bytes travel inside the activation message (0: none).
  index_t eager_limit = 16384;
  // Check every local edge of the graph both ways before each run (the tests).
  bool validate = false;
  // Task granularity: 1 is paper 000's graph, Send(t, k) per segment; G > 1
  // groups G consecutive target tiles of one tile column into one task group, with
  // one Send(g, s, r) per source rank s and target rank r (all the segments of
  // the group from s to r in one flow) and Init/Receive/Finish per group and
  // target rank. kGrainAuto (default): 1, unless the segments are small and
  // many (docs/taskgraph.md).
  index_t grain = kGrainAuto;
  // With dynamic_volume and isolate_segments: a remote segment (grain > 1: a
  // group's segments for one peer, when they lie in one storage block) leaves from
  // the source storage as an MPI datatype and is received straight into the target
  // (no pack, no unpack); off: Send packs it into a buffer and Receive unpacks it.
  bool datatypes = true;
};

struct Options {
  // The strategy execute() runs when none is named ("auto" allowed).
  std::string strategy = "p2p";
  // Messages larger than this are sent as several messages (MPI counts are int).
  index_t max_message_bytes = index_t{1} << 30;
  // Memory budget (bytes per rank, 0: none): the most a strategy may allocate on
  // any rank for its data buffers beyond the source and target (packed messages;
  // see extra_memory). make_plan fails, naming the smallest budget that works,
  // when options.strategy does not fit; auto picks among the strategies that
  // fit; execute refuses a strategy that does not.
  index_t max_buffer_bytes = 0;
  // target = alpha * op(source) + beta * target, applied while copying (the
  // region's axes= transposes; docs/transforms.md). Only the strategies that
  // unpack into the target apply it (StrategyInfo::arithmetic): make_plan and
  // execute refuse the others with an error naming those that can, and auto picks
  // among those. The default (the identity) moves the bytes as they are.
  Arithmetic arithmetic{};
  // The machine model of `auto` and Plan::predictions(), fixed when the plan is
  // made, never read or measured inside execute: `machine` when given; else the
  // calibration file `calibration` (which must exist); else, when `strategy` is
  // auto, the default calibration file ($REDIST_CALIBRATION or
  // ~/.cache/redist/calibration.json), or a quick measurement in make_plan when
  // there is none. A plan made without a model cannot run auto.
  std::shared_ptr<const Machine> machine{};
  std::string calibration{};
  // true: fix a model as for auto (the default calibration file, else a quick
  // measurement) whatever `strategy` is, once the arguments are checked, so that
  // bad arguments fail at once and Plan::machine() serves predictions and bounds
  // (redist run). Ignored when `machine` or `calibration` is given.
  bool model = false;
  TaskgraphOptions taskgraph{};
  // Ranks per node for the node-aware strategy `shm` (include/redist/shm.hpp):
  // 0: the groups of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or
  // $REDIST_NODE_SIZE when set; k > 0: each such group split into nodes of k
  // consecutive ranks (on-node and off-node paths on one machine).
  int node_size = 0;
  // true: the plan works on a duplicate of make_plan's communicator, its own tag
  // space (make_plan then costs an MPI_Comm_dup, some microseconds). false: on the
  // communicator itself, which must outlive the plan, gets MPI_ERRORS_RETURN as its
  // error handler, and may carry no other point-to-point traffic while the plan
  // executes (the ScaLAPACK drop-in's own union communicators, whose first calls
  // plan every time).
  bool duplicate_comm = true;
  // How many executes the plan is for (CDT's COUNT, paper 002; 0: unknown, many).
  // What a strategy builds on its first run for the runs after it (packed
  // buffers, derived datatypes, forwarding routes and slots, task graphs, segment
  // records) is kept for that many executes, then dropped: after every
  // `executions`-th execute the plan holds no buffers (Plan::held_bytes() == 0),
  // and a later execute builds them again. 1: a transfer made once keeps nothing.
  index_t executions = 0;
  // `auto` measuring instead of trusting the model alone (0: the model alone). With
  // k > 0 the first 2k executes under auto alternate between the two strategies the
  // model predicts fastest (each run correct: a trial is a real execute), timing
  // each; then auto keeps the one with the smaller median time, the slowest rank's
  // (one MPI_Allreduce). Where the machine's speed moves between launches (two
  // levels on this VM, docs/shm.md), the choice follows the level of the moment.
  // Plan::auto_choice() is empty until the trials end.
  int auto_trials = 0;
  // Threads per rank for this rank's copies (docs/strategies.md, "Copy threads"):
  // its local pieces, the packing and unpacking of each peer's message, and shm's
  // push into shared windows, each cut into parts of at least 4 MB, one thread per
  // part, the calling thread doing one. 0: $REDIST_COPY_THREADS, else 1 (every copy
  // on the calling thread). Results are the same bytes whatever the count, so each
  // rank may pass its own (not agreed). Threads of a rank bound to one core gain
  // nothing: Open MPI binds each rank to a core when at most 2 start
  // (mpirun --bind-to none).
  int copy_threads = 0;
};

// extra_memory with the budget (max_buffer_bytes) and the arithmetic of `options`.
index_t extra_memory(const RankPlan& rp, std::string_view strategy, const Options& options);

class PlanImpl;
namespace detail {
struct PlanAccess;  // the library's own access to a plan's insides (src/exec/strategy.hpp)
}

// The `taskgraph` strategy's task graph (Init/Send/Receive/Finish) for this
// redistribution on `ranks` ranks, unrolled into Graphviz DOT (docs/taskgraph.md).
// No MPI; meant for small cases. Throws redist::Error on invalid layouts or region.
std::string taskgraph_dot(const Layout& src, const Layout& dst, const Region& region, int ranks,
                          const TaskgraphOptions& options = {});

class Plan {
 public:
  Plan();
  explicit Plan(std::unique_ptr<PlanImpl> impl);
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  ~Plan();

  // An empty Plan (default-made, moved from, or a rank in neither group of
  // make_group_plan) has none of what follows: each throws redist::Error saying
  // so, but comm(), which is MPI_COMM_NULL.
  bool empty() const noexcept { return !impl_; }
  const RankPlan& rank_plan() const;
  const PlanStats& stats() const;
  const Layout& source() const;
  const Layout& target() const;
  const Region& region() const;  // the first of regions()
  const std::vector<Region>& regions() const;
  const Options& options() const;
  MPI_Comm comm() const;  // the plan's own duplicate of the user's communicator (Options::duplicate_comm)
  // The machine model fixed at make_plan (null: none; see Options::machine).
  const Machine* machine() const;
  // What auto chose; empty until an execute with auto decided.
  const std::string& auto_choice() const;
  // Options::auto_trials: the trial executes so far, in the order they ran, each
  // with the strategy it ran and its seconds on this rank (auto compares the
  // slowest rank's medians). Empty without trials. Local.
  struct AutoTrial {
    std::string strategy;
    double seconds = 0;
  };
  std::vector<AutoTrial> auto_trial_runs() const;
  // The executes `strategy` (auto: the strategy it chose; none before its first
  // execute) spends on its first runs choosing how it runs, after which it runs
  // as it will: shm times its rings' slot stores (docs/shm.md "Slots by
  // timing"); 0 for the others. The same on every rank. `redist run` and `redist
  // bench` run them before a strategy's warm-up, so its timed runs are settled.
  int tuning_executes(const std::string& strategy) const;
  // What `strategy` did on this rank in its last execute, in words, when that
  // depends on more than the plan (shm: the bytes that went through shared
  // windows, by messages, from other nodes); empty otherwise or before a run.
  std::string describe(const std::string& strategy) const;
  // Collective: the max over ranks of each strategy's predicted seconds, in
  // strategies() order (the same vector on every rank). Needs a machine model.
  // Infinity for a strategy the plan's options rule out (over
  // Options::max_buffer_bytes; without Options::arithmetic when that is set).
  std::vector<double> predictions() const;
  // The same for these source buffers: a strategy whose model needs more than
  // the plan (shm: the source in shared windows) and does not hold for them on
  // some rank predicts its heap model there (StrategyInfo::heap_model; infinity
  // without one). What auto compares.
  std::vector<double> predictions(std::span<const void* const> src_blocks) const;
  // The same for arrays in `storage`, without the buffers: "shared" (in shared
  // windows: predictions()) or "heap" (memory the caller allocated: every such
  // strategy its heap model, as auto for heap buffers; `redist plan --predict
  // --storage`, the C API's and Python's predictions). Another name: the same
  // redist::Error on every rank.
  std::vector<double> predictions_for(std::string_view storage) const;
  // The most bytes this rank's plan has held at once for data buffers (packed
  // messages, whatever strategies it ran): the measured extra memory, which stays
  // within Options::max_buffer_bytes when one is set.
  index_t buffer_bytes() const;
  // The data buffers the plan holds now (buffer_bytes() is the most it held):
  // 0 after an Options::executions-th execute. Under a budget, running a strategy
  // that would not fit beside what the others keep drops their buffers first (and
  // they set up again when they run next).
  index_t held_bytes() const;
  // Under a budget (Options::max_buffer_bytes): the data buffers `strategy` needs
  // on the busiest rank, as the budget counts them (agreed when the plan was made;
  // the forwarding strategies' from their schedules); -1 without a budget. Local.
  index_t extra_bytes(std::string_view strategy) const;

  // Collective. One buffer per rank for `tile` and `local_array` storage (may be
  // null when this rank stores nothing). Source and target buffers must not
  // overlap. Every rank names the same strategy (empty: Options::strategy).
  // Throws redist::Error (same on every rank, nothing moved) on bad arguments.
  // One thread at a time per plan (several plans may run at once from threads
  // of their own): a second thread calling execute or predictions while one
  // runs gets redist::Error at once, on its rank only. An MPI call that fails
  // throws redist::MpiError on the rank that saw it (not agreed: end the job);
  // the plan then refuses to run again (docs/strategies.md, "Faults", "Threads").
  void execute(const void* src, void* dst, std::string_view strategy = {});
  // General form: one pointer per block (tile_pointers: one per local tile, in
  // LocalIndex order; other storages: exactly one).
  void execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
               std::string_view strategy = {});
  // Front ends (the Python binding): the general form, with `caller_error`, when
  // not empty, what the caller found wrong on this rank in arguments that only
  // it can see (a buffer's element type, its contiguity). It joins execute's one
  // agreement: every rank throws the same redist::Error and nothing moves.
  void execute(std::span<const void* const> src_blocks, std::span<void* const> dst_blocks,
               std::string_view strategy, std::string_view caller_error);
  // Typed one-buffer form (tile and local_array storage): the spans must hold at
  // least this rank's local elements, and sizeof(T) must be the element size.
  template <class T>
  void execute(std::span<const T> src, std::span<T> dst, std::string_view strategy = {}) {
    execute_sized(src.data(), static_cast<index_t>(src.size_bytes()), dst.data(),
                  static_cast<index_t>(dst.size_bytes()), static_cast<index_t>(sizeof(T)), strategy);
  }
  // The same with vectors (sized as LocalIndex(layout, rank).elements()).
  template <class T, class A, class B>
  void execute(const std::vector<T, A>& src, std::vector<T, B>& dst, std::string_view strategy = {}) {
    execute(std::span<const T>(src), std::span<T>(dst), strategy);
  }

 private:
  friend struct detail::PlanAccess;
  void execute_sized(const void* src, index_t src_bytes, void* dst, index_t dst_bytes, index_t elem_size,
                     std::string_view strategy);
  PlanImpl& impl(const char* what) const;     // *impl_, or redist::Error naming `what` on an empty Plan
  PlanImpl& running(const char* what) const;  // also redist::Error after MPI_Finalize
  std::unique_ptr<PlanImpl> impl_;
};

// Collective over `comm`: checks the arguments on every rank, agrees on the
// outcome (same error on every rank, nothing moved), then plans this rank and
// fixes the machine model (see Options::machine). The plan gets a duplicate of
// `comm` of its own. Like every collective, call it from one thread at a time
// per communicator (in the same order on every rank); threads with
// communicators of their own may make plans at once.
Plan make_plan(const Layout& src, const Layout& dst, const Region& region, MPI_Comm comm,
               const Options& options = {});
// The same for several regions moved at once by one plan (one message per peer
// for all of them): each must fit both arrays and no two may overlap in the
// target (check_regions; they may in the source); none is a plan with nothing
// to do. The task graph strategy takes one region: with several it runs p2p.
Plan make_plan(const Layout& src, const Layout& dst, std::span<const Region> regions, MPI_Comm comm,
               const Options& options = {});

}  // namespace redist
