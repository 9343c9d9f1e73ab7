// One run of a task graph on one rank: workers, epilogues, termination, and the
// collective agreement on errors (paper 004, sec. III-B and III-C).
#include <sched.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "comm.hpp"
#include "dep_table.hpp"
#include "lending.hpp"
#include "mpi/agree.hpp"
#include "redist/error.hpp"
#include "redist/runtime/runtime.hpp"
#include "scheduler.hpp"
#include "topology.hpp"
#include "validate.hpp"

namespace redist::runtime {
namespace detail {
namespace {

// Points of an execution space are claimed by the workers of a rank in chunks of
// this many consecutive points: few enough atomic operations, small enough for
// the workers to finish within a few tasks of each other.
constexpr std::int64_t kChunk = 32;

class Engine {
 public:
  Engine(TaskGraph& graph, MPI_Comm comm, const Options& options, std::int64_t local_tasks,
         const RemoteIo& io, int rank)
      : graph_(graph),
        options_(options),
        rank_(rank),
        local_tasks_(local_tasks),
        io_(io),
        sched_(options.threads, options.numa_steal ? numa_node_of_workers(options.threads)
                                                   : std::vector<int>{}),
        deps_(rank),
        comm_(graph, comm, options,
              Comm::Handlers{[this](int w, const TaskClass& c, const Params& p, int f,
                                    const Data& d) { release_remote(w, c, p, f, d); },
                             [this](int origin, std::string msg) {
                               fail(origin, std::move(msg), false);
                             },
                             [this](int w, const TileKey& key, const Data& d) { release_tile(w, key, d); },
                             [this](int w, int source, const std::vector<std::int64_t>& msg) {
                               on_lending(w, source, msg);
                             }}),
        next_chunk_(new std::atomic<std::int64_t>[graph.num_classes()]) {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    // On one rank no message can ever arrive: no communication thread, the calling
    // thread is worker 0 and nobody polls MPI (N threads on N cores, not N + 1).
    // CommMode::workers: no communication thread either; the workers poll MPI
    // between tasks and while idle.
    inline_ = ranks == 1 || options.comm_mode == CommMode::workers;
    progress_ = options.comm_mode != CommMode::funneled && ranks > 1;
    between_ = options.comm_mode == CommMode::workers && ranks > 1;
    drain_at_end_ = options.lend && ranks > 1;
    if (drain_at_end_) maps_ = lend_maps(graph, comm, rank, ranks);
    peer_finished_.assign(static_cast<std::size_t>(ranks), 0);
    for (int id = 0; id < graph.num_classes(); ++id) {
      next_chunk_[id].store(0, std::memory_order_relaxed);
      if (!graph.at(id).has_priority()) lazy_classes_.push_back(id);
    }
    for (int w = 0; w < options.threads; ++w) workers_.push_back(std::make_unique<Worker>());
  }

  void run(Stats& stats) {
    try {
      start_remote_io();
    } catch (const std::exception& e) {
      fail(rank_, cat("serving remote reads failed: ", e.what()), true);
    }
    std::vector<std::thread> threads;
    for (int w = inline_ ? 1 : 0; w < options_.threads; ++w) try {
        threads.emplace_back([this, w] { worker_main(w); });
      } catch (const std::system_error& e) {
        // Its tasks would wait forever: the run ends, on every rank, as for a
        // task that failed (the workers started see the abort and stop).
        fail(rank_, cat("cannot start worker thread ", w, " of ", options_.threads, ": ", e.what()), true);
        break;
      }
    if (inline_)
      worker_main(0);
    else
      comm_loop();
    finished_.store(true, std::memory_order_release);
    sched_.wake_all();
    for (auto& t : threads) t.join();
    if (aborted_) comm_.abandon();
    // A STEAL that crossed its owner's FINISHED was never received (lending.hpp):
    // every rank receives what was sent to it and not received, collectively.
    if (drain_at_end_) comm_.drain();
    stats.tasks = executed() - returned_.load(std::memory_order_acquire);
    stats.lent = returned_.load(std::memory_order_acquire);
    for (auto& w : workers_) {
      stats.borrowed += w->borrowed;
      stats.steals += w->steals;
      stats.placeholder_hits += w->placeholder_hits;
      stats.busy_seconds += w->busy;
    }
    stats.rendezvous_peak = comm_.rendezvous_peak();
    stats.gets_sent = comm_.gets_sent();
    stats.activations_sent = comm_.activations_sent();
    stats.eager_bytes = comm_.eager_bytes();
    stats.rendezvous_bytes = comm_.rendezvous_bytes();
    stats.tiles_read = comm_.tiles_read();
    stats.tiles_written = comm_.tiles_written();
    stats.read_in_place = comm_.read_in_place();
  }

  int error_origin() const { return error_origin_; }
  const std::string& error_message() const { return error_message_; }
  // After a failed run, on every rank (Comm::drain).
  void drain() { comm_.drain(); }

 private:
  struct alignas(64) Worker {
    std::atomic<std::int64_t> executed{0};  // written by its worker only
    std::int64_t steals = 0;
    std::int64_t borrowed = 0;  // tasks of other ranks run (Options::lend)
    std::int64_t placeholder_hits = 0;
    double busy = 0;  // seconds in task bodies
    // The placeholder (paper 004, sec. III-B): the best task this worker's last
    // completed task enabled, run next by this worker; only it touches the slot.
    bool has_slot = false;
    ReadyTask slot;
    // The walk over the classes without priorities (lazy_classes_), resumed
    // whenever this worker has nothing of priority >= 0 queued.
    std::size_t lazy_index = 0;
    std::optional<SpaceWalk> walk;
    std::int64_t at = -1, end = 0;  // position of walk, end of the claimed chunk
  };

  // This rank's tasks done: run here, or lent and returned.
  std::int64_t executed() const {
    std::int64_t n = returned_.load(std::memory_order_acquire);
    for (auto& w : workers_) n += w->executed.load(std::memory_order_acquire);
    return n;
  }

  // Before any task runs: this rank's tiles that tasks of other ranks read go to
  // those ranks (once per rank), as the tiles are now; a tile the run may change is
  // sent as a copy. The run then waits for the writes other ranks send here.
  void start_remote_io() {
    comm_.expect_writes(io_.incoming_writes());
    for (const RemoteIo::Send& s : io_.sends()) {
      Data d = graph_.collection(s.key.coll).data_of(s.key.tile);
      if (io_.modified(s.key) && d.size() > options_.eager_limit) {  // an eager payload is a copy already
        Data copy = Data::allocate(d.size());
        std::memcpy(copy.bytes(), d.bytes(), d.size());
        d = std::move(copy);
      }
      comm_.send_tile(s.dest, false, s.key, d);
    }
  }

  // The communication thread (paper 004, sec. III-C), when there are other ranks.
  void comm_loop() {
    for (int idle = 0; !aborted_.load(std::memory_order_acquire);) {
      bool did = false;
      try {
        did = comm_.progress(-1, true);
      } catch (const std::exception& e) {
        fail(rank_, e.what(), true);
      }
      lend_idle(false);  // a worker that has nothing to run asks; this thread only says FINISHED
      // lend_quiet before idle: a worker sets finished_sent_ and posts its FINISHED
      // under lend_mutex_, so once lend_quiet has seen the one, idle sees the other
      // (pending). Checked the other way round, idle could pass just before a worker
      // posted FINISHED and lend_quiet just after: in funneled mode the FINISHED stayed
      // in the command queue, never sent, and its peer waited for it forever (1 run
      // in 30-80 of runtime_cholesky's LendsTasksAcrossRanksOfANode on 3 ranks).
      if (executed() == local_tasks_ && lend_quiet() && comm_.idle()) break;
      // While a worker polls MPI itself (multiple mode), a second poller would only
      // take its core: step aside. When all workers compute, progress here.
      if (polling_.load(std::memory_order_acquire) > 0) {
        sched_yield();
        continue;
      }
      backoff(did ? (idle = 0) : ++idle);
    }
  }

  // The comm thread is not meant to own a core (paper 004, sec. III-C: it calls
  // nanosleep); it spins briefly first so that a ping-pong stays fast.
  static void backoff(int idle) {
    if (idle < 64) return;
    if (idle < 2048) {
      sched_yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

  // Moves `walk` (at position `at`) to the next point this worker owns, claiming
  // a new chunk of the class's points when the current one is used up.
  bool next_claimed(SpaceWalk& walk, std::int64_t& at, std::int64_t& end, int cls) {
    if (at + 1 < end) {
      ++at;
      return walk.advance(1);
    }
    const std::int64_t start = next_chunk_[cls].fetch_add(1, std::memory_order_relaxed) * kChunk;
    const std::int64_t skip = start - at;  // >= 1: chunks are claimed in increasing order
    at = start;
    end = start + kChunk;
    return walk.advance(skip);
  }

  // Fills `t` when (c, p) runs on this rank and waits for no task input.
  bool startup_task(const TaskClass& c, const Params& p, ReadyTask& t) {
    if (c.rank_of(p) != rank_ || prepare_inputs(c, p, rank_, t.flows) != 0) return false;
    t.cls = &c;
    t.params = p;
    t.priority = c.priority_of(p);
    return true;
  }

  // Enumeration (paper 004, sec. III-B), shared by the workers: each walks the
  // execution spaces, claims chunks of points and queues its startup tasks of the
  // classes with priorities in one batch, so that they compete by priority.
  void enumerate_prioritized(int w) {
    std::vector<ReadyTask> ready;
    for (int id = 0; id < graph_.num_classes(); ++id) {
      const TaskClass& c = graph_.at(id);
      if (!c.has_priority()) continue;
      SpaceWalk walk(c);
      std::int64_t at = -1, end = 0;
      ReadyTask t;
      while (!aborted_.load(std::memory_order_relaxed) && next_claimed(walk, at, end, id))
        if (startup_task(c, walk.params(), t)) ready.push_back(std::move(t));
    }
    sched_.push_all(w, ready);
  }

  // The next startup task of the classes without priorities (all at priority 0)
  // this worker claims. Runs straight from the walk: no queue, lock or allocation
  // for independent tasks.
  bool next_lazy(int w, ReadyTask& t) {
    Worker& me = *workers_[w];
    while (me.lazy_index < lazy_classes_.size()) {
      const int id = lazy_classes_[me.lazy_index];
      const TaskClass& c = graph_.at(id);
      if (!me.walk) {
        me.walk.emplace(c);
        me.at = -1;
        me.end = 0;
      }
      while (!aborted_.load(std::memory_order_relaxed) && next_claimed(*me.walk, me.at, me.end, id))
        if (startup_task(c, me.walk->params(), t)) return true;
      me.walk.reset();
      ++me.lazy_index;
    }
    return false;
  }

  void worker_main(int w) {
    try {
      enumerate_prioritized(w);
    } catch (const std::exception& e) {
      fail(rank_, cat("starting the tasks failed: ", e.what()), true);
    }
    worker_loop(w);
  }

  void worker_loop(int w) {
    Worker& me = *workers_[w];
    bool lazy = !lazy_classes_.empty();
    int idle = 0;
    ReadyTask t;
    while (!finished_.load(std::memory_order_acquire) && !aborted_.load(std::memory_order_acquire)) {
      bool stolen = false, got = take_slot(w, lazy, t);
      if (!got && lazy) {
        // Queued tasks of priority >= 0 first, then the walk (priority 0).
        got = sched_.pop_own_at_least(w, 0, t);
        if (!got) {
          try {
            got = next_lazy(w, t);
          } catch (const std::exception& e) {
            fail(rank_, cat("starting the tasks failed: ", e.what()), true);
          }
          lazy = got;
        }
      }
      if (got || sched_.pop(w, t, stolen)) {
        if (progress_ && idle > 0) polling_.fetch_sub(1, std::memory_order_acq_rel);
        me.steals += stolen;
        execute(w, t);
        idle = 0;
        if (between_) progress_between(w);
        continue;
      }
      lend_idle(true);
      if (inline_ && executed() == local_tasks_ && comm_.idle() && lend_quiet()) {  // no comm thread to tell us
        finished_.store(true, std::memory_order_release);
        sched_.wake_all();
        break;
      }
      // An idle worker progresses MPI itself, so that the task a message enables
      // runs on the thread that received it, without a thread switch.
      if (progress_) {
        if (idle == 0) polling_.fetch_add(1, std::memory_order_acq_rel);
        bool did = false;
        try {
          did = comm_.progress(w, false);
        } catch (const std::exception& e) {
          fail(rank_, e.what(), true);
        }
        if (did) {
          idle = 1;  // still polling
          continue;
        }
      }
      if (++idle < 256) continue;
      if (idle < 4096) {
        sched_yield();
        continue;
      }
      if (between_ && w == 0) {
        // Nobody else watches MPI: worker 0 keeps polling, with pauses (as the
        // communication thread does), instead of sleeping until a local push.
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        continue;
      }
      if (progress_) polling_.fetch_sub(1, std::memory_order_acq_rel);
      sched_.sleep();
      idle = 0;
    }
    if (progress_ && idle > 0) polling_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Takes the task in worker w's placeholder into `t`, unless its own queue holds
  // one of higher priority (then that one, and the slot's task is queued): tasks
  // still run strictly by priority with one worker.
  bool take_slot(int w, bool lazy, ReadyTask& t) {
    Worker& me = *workers_[w];
    if (!me.has_slot) return false;
    me.has_slot = false;
    if (lazy && me.slot.priority < 0) {  // startup tasks of priority 0 still to come go first
      sched_.push(w, std::move(me.slot));
      return false;
    }
    if (sched_.pop_own_at_least(w, me.slot.priority + 1, t)) {
      sched_.push(w, std::move(me.slot));
      return true;
    }
    t = std::move(me.slot);
    ++me.placeholder_hits;
    return true;
  }

  // A local task became ready on worker w: its placeholder keeps the best such task
  // of the epilogue, the queue gets the others.
  void enable(int w, ReadyTask&& ready) {
    if (w < 0 || !options_.placeholder) {  // w < 0: the communication thread (a returned lent task)
      sched_.push(w, std::move(ready));
      return;
    }
    Worker& me = *workers_[w];
    if (!me.has_slot) {
      me.slot = std::move(ready);
      me.has_slot = true;
    } else {
      if (ready.priority > me.slot.priority) std::swap(ready, me.slot);
      sched_.push(w, std::move(ready));
    }
  }

  // CommMode::workers: one round of MPI progress after each task.
  void progress_between(int w) {
    try {
      comm_.progress(w, false);
    } catch (const std::exception& e) {
      fail(rank_, e.what(), true);
    }
  }

  // The body of `t` on worker w, its time counted busy.
  void run_body(int w, ReadyTask& t) {
    TaskContext ctx(*t.cls, t.params, t.flows.data(), rank_, w);
    const auto t0 = std::chrono::steady_clock::now();
    t.cls->body_fn()(ctx);
    workers_[w]->busy += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void execute(int w, ReadyTask& t) {
    if (t.lender >= 0) return run_borrowed(w, t);
    const TaskClass& c = *t.cls;
    try {
      run_body(w, t);
      epilogue(w, t);
    } catch (const std::exception& e) {
      fail(rank_, cat("task ", c.describe(t.params), " failed: ", e.what()), true);
    } catch (...) {
      fail(rank_, cat("task ", c.describe(t.params), " failed: unknown exception"), true);
    }
    t.flows.clear();  // release the data before counting the task as done
    auto& done = workers_[w]->executed;
    done.store(done.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Evaluates the OUT dependencies of a completed task: local successors are
  // released directly, each remote rank gets one activation (paper 004, sec. III-C).
  void epilogue(int w, ReadyTask& t) {
    const TaskClass& c = *t.cls;
    std::vector<std::pair<int, std::vector<int>>> remote;  // destination -> flows
    for (int f = 0; f < c.num_flows(); ++f) {
      const Data& d = t.flows[f];
      for (const Dep& dep : c.flow_at(f).outs) {
        if (!guard_holds(dep, t.params)) continue;
        if (dep.end.collection) {
          if (d.is_typed())
            ::redist::detail::fail("output ", c.describe(t.params),
                                   " is a typed view: it cannot be written to a collection");
          const Tile tile = dep.end.tile(t.params);
          if (const int owner = dep.end.collection->rank_of(tile); owner != rank_) {
            comm_.send_tile(owner, true, TileKey{dep.collection_index, tile}, d);  // a remote write
            continue;
          }
          store_tile(dep.end.collection->data_of(tile), d);
          continue;
        }
        const TaskClass& dst = *dep.end.task;
        for_each_target(dep.end.targets(t.params), [&](const Params& q) {
          int r = dst.rank_of(q);
          if (r == rank_) {
            ReadyTask ready;
            if (deps_.deliver(dst, q, dep.flow_index, d, ready)) enable(w, std::move(ready));
            return;
          }
          auto it = remote.begin();
          while (it != remote.end() && it->first != r) ++it;
          if (it == remote.end()) it = remote.insert(remote.end(), {r, {}});
          if (it->second.empty() || it->second.back() != f) it->second.push_back(f);
        });
      }
    }
    for (auto& [dest, flows] : remote) comm_.activate(dest, c, t.params, flows, t.flows.data());
  }

  // A remote producer's output arrived: find its local successors symbolically.
  void release_remote(int w, const TaskClass& c, const Params& p, int f, const Data& d) {
    for (const Dep& dep : c.flow_at(f).outs) {
      if (!dep.end.task || !guard_holds(dep, p)) continue;
      const TaskClass& dst = *dep.end.task;
      for_each_target(dep.end.targets(p), [&](const Params& q) {
        if (dst.rank_of(q) != rank_) return;
        ReadyTask ready;
        if (deps_.deliver(dst, q, dep.flow_index, d, ready)) sched_.push(w, std::move(ready));
      });
    }
  }

  // A remote tile arrived: every local flow that reads it gets it (it travelled once).
  void release_tile(int w, const TileKey& key, const Data& d) {
    const std::vector<Reader>* readers = io_.readers(key);
    if (!readers)
      ::redist::detail::fail("internal error: tile (", key.tile.m, ", ", key.tile.n,
                             ") arrived, but no task here reads it");
    for (const Reader& r : *readers) {
      ReadyTask ready;
      if (deps_.deliver(*r.cls, r.params, r.flow, d, ready)) sched_.push(w, std::move(ready));
    }
  }

  // --- Lending tasks across the ranks of a node (Options::lend, lending.hpp) ---

  // No peer to lend to or borrow from: nothing of the protocol runs.
  bool lending() const { return !maps_.peers.empty(); }

  // Called while a worker has nothing to run (`ask`), and by the communication
  // thread: tells the peers once that this rank's tasks are all done; with `ask`,
  // asks the next peer that is not finished for a task, one request at a time.
  void lend_idle(bool ask) {
    if (!lending()) return;
    std::lock_guard lock(lend_mutex_);
    if (!finished_sent_ && executed() == local_tasks_) {
      finished_sent_ = true;
      for (int p : maps_.peers) comm_.send_control(p, {Comm::kFinished});
    }
    if (!ask || asking_ >= 0 || std::chrono::steady_clock::now() < ask_after_) return;
    for (std::size_t i = 0; i < maps_.peers.size(); ++i) {
      const int p = maps_.peers[(next_peer_ + i) % maps_.peers.size()];
      if (peer_finished_[static_cast<std::size_t>(p)]) continue;
      next_peer_ = (next_peer_ + i + 1) % maps_.peers.size();
      asking_ = p;
      comm_.send_control(p, {Comm::kSteal});
      return;
    }
  }

  // This rank may leave: it said it is finished, every peer said so, no request
  // of its own is open and no borrowed task is queued or running.
  bool lend_quiet() {
    if (!lending()) return true;
    std::lock_guard lock(lend_mutex_);
    if (!finished_sent_ || asking_ >= 0 || borrowed_.load(std::memory_order_acquire) > 0) return false;
    for (int p : maps_.peers)
      if (!peer_finished_[static_cast<std::size_t>(p)]) return false;
    return true;
  }

  void on_lending(int w, int source, const std::vector<std::int64_t>& msg) {
    switch (msg[0]) {
      case Comm::kSteal: return lend_to(w, source);
      case Comm::kLend: {
        std::size_t at = 2;
        for (std::int64_t n = 0; n < msg[1]; ++n) {
          const TaskClass& c = graph_.at(static_cast<int>(msg[at + 1]));
          ReadyTask t;
          t.cls = &c;
          t.params = Params{msg[at + 2], msg[at + 3], msg[at + 4], msg[at + 5]};
          t.priority = c.priority_of(t.params);
          t.lender = source;
          t.lend_id = msg[at];
          at += 6;
          t.flows = lent_flows(graph_, c, t.params, rank_, source, msg, at);
          borrowed_.fetch_add(1, std::memory_order_acq_rel);
          sched_.push(w, std::move(t));
        }
        std::lock_guard lock(lend_mutex_);
        asking_ = -1;  // after the tasks are queued: lend_quiet sees them in borrowed_
        return;
      }
      case Comm::kNoLend: {
        std::lock_guard lock(lend_mutex_);
        asking_ = -1;
        ask_after_ = std::chrono::steady_clock::now() + std::chrono::microseconds(kAskPauseUs);
        return;
      }
      case Comm::kReturn: {
        ReadyTask t;
        {
          std::lock_guard lock(lend_mutex_);
          auto it = lent_.find(msg[1]);
          if (it == lent_.end()) ::redist::detail::fail("internal error: rank ", source, " returned unknown task ", msg[1]);
          t = std::move(it->second);
          lent_.erase(it);
        }
        std::size_t at = 2;
        returned_flows(msg, at, t.flows);
        epilogue(w, t);
        t.flows.clear();
        returned_.fetch_add(1, std::memory_order_acq_rel);  // counted done only now
        return;
      }
      case Comm::kFinished: {
        std::lock_guard lock(lend_mutex_);
        peer_finished_[static_cast<std::size_t>(source)] = 1;
        if (asking_ == source) asking_ = -1;  // its answer, if any, came before
        return;
      }
      default:
        ::redist::detail::fail("internal error: lending message ", msg[0]);
    }
  }

  // A STEAL from `source`: lends half the queued tasks (at least one) of lowest
  // priority whose flows all lie in storage both ranks map; else NOLEND. A worker
  // between two tasks (w >= 0) keeps one for itself unless its placeholder holds
  // its next task; the communication thread (w < 0, the workers busy or about to
  // pick) keeps none: the borrower is idle now. Half, not one: with
  // CommMode::workers the owner answers only between two of its tasks, so the
  // borrower would get at most one task per task of the owner.
  void lend_to(int w, int source) {
    {
      std::lock_guard lock(lend_mutex_);
      if (finished_sent_) return;  // nothing left; the FINISHED on its way answers
    }
    std::vector<std::int64_t> scratch;
    auto ok = [&](const ReadyTask& t) {
      scratch.clear();
      return t.lender < 0 && append_lent_flows(graph_, maps_, rank_, source, t, scratch);
    };
    const int keep = w >= 0 && !workers_[w]->has_slot ? 1 : 0;
    const int most = std::max(1, (sched_.queued() - keep + 1) / 2);
    std::vector<std::int64_t> msg{Comm::kLend, 0};
    ReadyTask t;
    for (int n = 0; n < most && sched_.take_lowest(keep, ok, t); ++n) {
      std::int64_t id;
      {
        std::lock_guard lock(lend_mutex_);
        id = next_lend_id_++;
      }
      msg.insert(msg.end(), {id, t.cls->id(), t.params[0], t.params[1], t.params[2], t.params[3]});
      append_lent_flows(graph_, maps_, rank_, source, t, msg);
      ++msg[1];
      std::lock_guard lock(lend_mutex_);
      lent_.emplace(id, std::move(t));  // before the LEND: its RETURN may come at once
    }
    if (msg[1] == 0) msg = {Comm::kNoLend};
    comm_.send_control(source, std::move(msg));
  }

  // A task another rank lent: the body here, on the memory where its flows lie,
  // then RETURN with the flows' sizes; the lender finishes it.
  void run_borrowed(int w, ReadyTask& t) {
    const TaskClass& c = *t.cls;
    try {
      std::vector<const std::byte*> at;
      for (const Data& d : t.flows) at.push_back(d.bytes());
      run_body(w, t);
      std::vector<std::int64_t> msg{Comm::kReturn, t.lend_id};
      append_returned_flows(c, t.params, at, t.flows, msg);
      t.flows.clear();
      comm_.send_control(t.lender, std::move(msg));
      ++workers_[w]->borrowed;
    } catch (const std::exception& e) {
      fail(rank_, cat("task ", c.describe(t.params), " (lent by rank ", t.lender, ") failed: ", e.what()), true);
    }
    t.flows.clear();
    borrowed_.fetch_sub(1, std::memory_order_acq_rel);
  }

  void fail(int origin, std::string message, bool tell_others) {
    {
      std::lock_guard lock(error_mutex_);
      if (origin < error_origin_) {
        error_origin_ = origin;
        error_message_ = std::move(message);
      }
    }
    bool first = !aborted_.exchange(true, std::memory_order_acq_rel);
    if (first && tell_others) comm_.abort_all(origin, error_message_);
    sched_.wake_all();
  }

  TaskGraph& graph_;
  Options options_;
  const int rank_;
  const std::int64_t local_tasks_;
  const RemoteIo& io_;
  Scheduler sched_;
  DepTable deps_;
  Comm comm_;
  bool inline_ = false;    // one rank: the calling thread is worker 0, no comm thread
  bool progress_ = false;  // idle workers progress MPI (CommMode::multiple/workers, > 1 rank)
  bool between_ = false;   // workers progress MPI after each task (CommMode::workers, > 1 rank)
  std::unique_ptr<std::atomic<std::int64_t>[]> next_chunk_;  // per class: next chunk to claim
  std::vector<int> lazy_classes_;  // classes without priorities: started from the walk
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<int> polling_{0};  // workers currently polling MPI while idle
  // Lending (Options::lend, lending.hpp).
  static constexpr int kAskPauseUs = 20;  // after a NOLEND, before the next STEAL
  bool drain_at_end_ = false;             // Options::lend on more than one rank (every rank alike)
  LendMaps maps_;                         // who maps whose storage; the peers
  std::mutex lend_mutex_;                 // the state below, except the atomics
  bool finished_sent_ = false;
  int asking_ = -1;                       // the peer asked, until it answers
  std::size_t next_peer_ = 0;
  std::chrono::steady_clock::time_point ask_after_{};
  std::vector<char> peer_finished_;       // by rank
  std::int64_t next_lend_id_ = 0;
  std::unordered_map<std::int64_t, ReadyTask> lent_;
  std::atomic<std::int64_t> returned_{0};  // lent tasks returned: done
  std::atomic<std::int64_t> borrowed_{0};  // borrowed tasks queued or running
  std::atomic<bool> finished_{false}, aborted_{false};
  std::mutex error_mutex_;
  int error_origin_ = INT_MAX;
  std::string error_message_;
};

}  // namespace
}  // namespace detail

Stats run(TaskGraph& graph, MPI_Comm user_comm, const Options& options) {
  auto t0 = std::chrono::steady_clock::now();
  MPI_Comm comm;  // private tag space: runs never see each other's messages
  ::redist::detail::check_mpi(MPI_Comm_dup(user_comm, &comm), "MPI_Comm_dup");
  // Every rank throws the error of the lowest rank where one happened
  // (ARCHITECTURE.md, "fail cleanly"), after freeing the duplicate.
  auto agree = [&comm](const std::string& local_error) {
    try {
      ::redist::detail::agree(comm, local_error);
    } catch (...) {
      MPI_Comm_free(&comm);
      throw;
    }
  };
  int rank = 0, ranks = 1, level = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  MPI_Query_thread(&level);

  std::string err;
  if (options.threads < 1)
    err = detail::cat("runtime::run: options.threads must be >= 1, got ", options.threads);
  else if (options.comm_mode == CommMode::multiple && level < MPI_THREAD_MULTIPLE)
    err = "runtime::run: CommMode::multiple needs MPI initialized with MPI_THREAD_MULTIPLE";
  else if (options.comm_mode == CommMode::workers && options.threads > 1 && level < MPI_THREAD_MULTIPLE)
    err = "runtime::run: CommMode::workers with more than one thread needs MPI initialized with "
          "MPI_THREAD_MULTIPLE";
  else if (options.max_rendezvous < 0)
    err = detail::cat("runtime::run: options.max_rendezvous must be >= 0, got ", options.max_rendezvous);
  if (err.empty()) err = graph.resolve();
  std::int64_t local_tasks = 0;
  detail::RemoteIo io(rank);
  if (err.empty()) {
    try {
      err = detail::validate_graph(graph, rank, ranks, options.validate, local_tasks, io);
    } catch (const std::exception& e) {
      err = detail::cat("invalid task graph: evaluating it threw: ", e.what());
    }
  }
  agree(err);

  Stats stats;
  {
    detail::Engine engine(graph, comm, options, local_tasks, io, rank);
    engine.run(stats);
    // The lowest failing rank holds its own error as the one of the lowest origin
    // (an ABORT can only bring errors of higher ranks to it): it alone reports.
    std::string mine;
    if (engine.error_origin() == rank)
      mine = engine.error_message().empty() ? "task graph run failed" : engine.error_message();
    try {
      ::redist::detail::agree(comm, mine);
    } catch (...) {
      // Every rank is here: receive what the run's messages left unreceived (a
      // failed run stops mid-flight) before the communicator goes.
      const std::exception_ptr failed = std::current_exception();
      engine.drain();
      MPI_Comm_free(&comm);
      std::rethrow_exception(failed);
    }
  }
  MPI_Comm_free(&comm);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace redist::runtime
