// The strategy interface (ARCHITECTURE.md, "exec - strategies"): one class per
// strategy, in a file of its own under strategies/, owning its per-plan state,
// with its cost model beside it; one registry of them (registry.cpp). Adding a
// strategy is one new file and one line in registry.cpp (docs/strategies.md).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "redist/exec.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define REDIST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define REDIST_LSAN 1
#endif
#endif

namespace redist::detail {

class Route;         // exec/relay.hpp: the forwarding strategies' routes
struct RelayGroups;

// A deliberate leak: memory that MPI may still write into after an MPI error
// (requests in flight) is never freed. LeakSanitizer is told, so that
// `make check-sanitize` reports only leaks nobody meant.
inline void leak_on_purpose(const void* p) {
#ifdef REDIST_LSAN
  if (p) __lsan_ignore_object(p);
#else
  (void)p;
#endif
}

// Block base pointers of one side for one execute.
struct SrcBlocks {
  std::span<const void* const> ptr;
  const std::byte* at(const Address& a, index_t es) const {
    return static_cast<const std::byte*>(ptr[a.block]) + a.offset * es;
  }
};
struct DstBlocks {
  std::span<void* const> ptr;
  std::byte* at(const Address& a, index_t es) const {
    return static_cast<std::byte*>(ptr[a.block]) + a.offset * es;
  }
};

// Options::copy_threads resolved (copy_threads_from, exec/threads.hpp): this
// rank's copy threads, and the smallest part of a copy phase in bytes (some 20 us
// to start a thread against some 400 us for 4 MB copied here; tests lower it with
// $REDIST_COPY_PART_BYTES).
struct CopyThreads {
  int threads = 1;
  index_t part_min = index_t{4} << 20;
};

// What every strategy sees of its plan: geometry and the plan's communicator,
// nothing strategy-specific. Immutable after make_plan, except the scratch
// buffers, which strategies that pack borrow for the length of one run (no
// strategy keeps data in them between runs, so sharing them is safe and a plan
// alternating strategies does not hold one copy of its volume per strategy).
class PlanCore {
 public:
  Layout src, dst;
  Region region;               // regions[0] (an empty region when there are none)
  std::vector<Region> regions;  // every region the plan moves (make_plan's list)
  Options options;
  CopyThreads copy;  // Options::copy_threads resolved (exec/threads.hpp)
  MPI_Comm comm = MPI_COMM_NULL;
  bool owns_comm = true;  // comm is the plan's duplicate (Options::duplicate_comm), freed with it
  int rank = 0, size = 1;
  std::unique_ptr<LocalIndex> src_local, dst_local;
  RankPlan rp;
  // Packed messages: peer i's bytes start at send_offset[i] (recv_offset[i]) in
  // the packed send (receive) buffer, segments one after another column-major.
  std::vector<index_t> send_offset, recv_offset;
  // Two process groups (make_group_plan, include/redist/groups.hpp): the ranks of
  // the sender group (0 .. S-1) and of the receiver group, in group order. Empty
  // for a plan of one group, where every rank is in both (group_senders()).
  std::vector<int> senders, receivers;
  std::vector<int> group_senders() const { return senders.empty() ? all_ranks() : senders; }
  std::vector<int> group_receivers() const { return receivers.empty() ? all_ranks() : receivers; }

  // The packed send (receive) buffer: rp.stats.bytes_sent (bytes_received) bytes,
  // null when 0; or at least `bytes` of it, for a strategy that packs only some
  // messages (p2p and segment leave out those that are one run of storage). It
  // grows to the most any strategy asked, never shrinks.
  std::byte* send_scratch() { return send_scratch(rp.stats.bytes_sent); }
  std::byte* recv_scratch() { return recv_scratch(rp.stats.bytes_received); }
  std::byte* send_scratch(index_t bytes) { return scratch(send_, send_bytes_, bytes); }
  std::byte* recv_scratch(index_t bytes) { return scratch(recv_, recv_bytes_, bytes); }
  // One packed message each way (`phased`): the largest this rank packs to send
  // (`largest_send` bytes), then the largest it unpacks (`largest_recv`), each at
  // most one piece under the memory budget (budget_piece); the whole-volume
  // buffers above when they exist. The same sizes on every call of a plan.
  // Call at the start of every run: the pointers may change between runs.
  std::byte* round_send(index_t largest_send, index_t largest_recv);
  std::byte* round_recv(index_t largest_send, index_t largest_recv);
  // Collective, on every rank at once: rank r's node leader (the first rank of its
  // node, node_leaders in exec/shm_window.hpp, with options.node_size), for each
  // rank of the plan; found on the first call, kept for the plan's life.
  const std::vector<int>& node_of();
  // Bytes of data buffers this plan holds now and at most (the scratch buffers):
  // Plan::buffer_bytes, what Options::max_buffer_bytes bounds.
  index_t buffer_bytes = 0, buffer_peak = 0;
  // Seconds make_plan spent fixing the machine model (a file read, a quick
  // measurement; ~0 when Options::machine was given): what a caller timing
  // make_plan leaves out for the planning alone (the harness's plan time).
  double model_seconds = 0;
  // Options::executions reached (the strategies' state already gone).
  void drop_scratch() {
    send_.reset(), recv_.reset(), round_.reset();
    send_bytes_ = recv_bytes_ = buffer_bytes = 0;
  }
  // After an MPI error, operations may still be in flight into the scratch
  // buffers: they are never freed (a leak, not a write into freed memory).
  void abandon_scratch() {
    leak_on_purpose(send_.release());
    leak_on_purpose(recv_.release());
    leak_on_purpose(round_.release());
    send_bytes_ = recv_bytes_ = 0;
  }

 private:
  void allocated(index_t bytes);  // counts, and frees round_ before a whole-volume buffer
  std::byte* scratch(std::unique_ptr<std::byte[]>& buf, index_t& have, index_t bytes);
  std::unique_ptr<std::byte[]> send_, recv_, round_;
  index_t send_bytes_ = 0, recv_bytes_ = 0;  // their sizes
  std::vector<int> node_of_;
  index_t round_send_bytes_ = 0;
  std::vector<int> all_ranks() const {
    std::vector<int> v(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) v[static_cast<size_t>(i)] = i;
    return v;
  }
};

// The library's own access to a plan's core (groups.cpp sets the group ranks).
struct PlanAccess {
  static PlanCore& core(const Plan& plan);
  // Collective (make_group_plan): the groups' union ranks, then the memory budget,
  // which needs them (the forwarding strategies' slots follow their routes).
  static void set_groups(Plan& plan, std::vector<int> senders, std::vector<int> receivers, index_t max_buffer_bytes);
};

// One strategy's state for one plan, made on the plan's first run of it.
class Strategy {
 public:
  explicit Strategy(PlanCore& plan) : plan_(plan) {}
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // Collective, once, right after construction: can it run here? Every rank
  // must return the same answer (agree inside). When false, the plan runs the
  // registry entry's `fallback` in its place, for good.
  virtual bool available() { return true; }
  // Moves the plan's data (the buffers are validated). Allocates nothing after
  // its first run.
  virtual void run(const SrcBlocks& src, const DstBlocks& dst) = 0;
  // What its last run did on this rank, in words, when that depends on more than
  // the plan (shm: which path each peer's data took). Plan::describe.
  virtual std::string describe() const { return {}; }

 protected:
  PlanCore& plan_;
};

struct StrategyEntry {
  std::string_view name;      // the one name (CLI, Options, docs, results)
  std::string_view summary;   // one line for --help and docs
  std::string_view fallback;  // run when available() is false ("": never false)
  std::unique_ptr<Strategy> (*make)(PlanCore& plan);
  // This rank's predicted seconds per execute (paper 000 Eq. 1), beside its code.
  Prediction (*predict)(const RankPlan& rp, const Machine& m);
  // The data buffers it allocates on this rank under the budget `budget`
  // (Options::max_buffer_bytes, 0: none), with or without Options::arithmetic;
  // null: the plan's packed send and receive volume (packed_volume), whatever
  // the budget.
  index_t (*extra_bytes)(const RankPlan& rp, index_t budget, bool arithmetic) = nullptr;
  // Optional, local: its model under a memory budget `budget` (> 0), where the
  // budget changes how it moves (smaller pieces: more messages). redist::predict
  // with a budget and Plan::predictions under Options::max_buffer_bytes use it in
  // place of `predict`.
  Prediction (*predict_budget)(const RankPlan& rp, const Machine& m, index_t budget) = nullptr;
  // Applies Options::arithmetic: every target write goes through copy_locals and
  // unpack_peer/unpack_run (exec/pack.hpp).
  bool arithmetic = false;
  // Collective, optional: a model that needs more than this rank's plan (the
  // forwarding strategies' routes, relay.hpp). Plan::predictions and auto use it
  // in place of `predict` (which stays the model without MPI: `redist plan`).
  Prediction (*predict_plan)(PlanCore& plan, const Machine& m) = nullptr;
  // Optional, local: does its model hold for these buffers on this rank (shm: the
  // source lies in shared windows)? Where a rank says no, auto takes `predict_heap`
  // for it, or leaves the strategy out when there is none.
  bool (*suits)(const PlanCore& plan, const SrcBlocks& src) = nullptr;
  std::string_view model_condition = {};  // what `suits` checks, in words (StrategyInfo)
  // Optional: its model for arrays where `suits` fails (heap memory; shm: the
  // cross-memory attach of `direct`), and that model in words (StrategyInfo).
  Prediction (*predict_heap)(const RankPlan& rp, const Machine& m) = nullptr;
  std::string_view heap_model = {};
  // Optional, local: its model when peers may be on other nodes (node_of[r]: rank
  // r's node, one per plan rank; empty: all on this rank's node), for arrays in
  // shared windows (heap false: `predict`'s model) or on the heap (`predict_heap`'s).
  // redist::predict with nodes and Plan::predictions use it in place of the two.
  Prediction (*predict_nodes)(const RankPlan& rp, const Machine& m, bool heap, std::span<const int> node_of) = nullptr;
  // Optional, local: its buffers on this rank where they depend on the storage and
  // the nodes (shm: none through shared windows, rings in /dev/shm on the heap,
  // packed messages only with peers on other nodes), with `predict_nodes`'s
  // arguments; redist::extra_memory with nodes uses it in place of `extra_bytes`.
  index_t (*extra_nodes)(const RankPlan& rp, bool heap, std::span<const int> node_of) = nullptr;
  // Collective, optional: its buffers on this rank when they depend on more than
  // this rank's plan (the forwarding strategies' slots); a memory budget
  // (Options::max_buffer_bytes) uses it in place of `extra_bytes`.
  index_t (*extra_plan)(PlanCore& plan) = nullptr;
  // The forwarding strategies' route, without a plan (relay_counts: `redist plan
  // --senders`).
  std::unique_ptr<Route> (*route)(RelayGroups groups) = nullptr;
  // Optional: the executes its first runs spend choosing how it runs (shm: the
  // trials of its rings' slot stores), the same on every rank
  // (Plan::tuning_executes).
  int (*tuning)() = nullptr;
};

// The bytes of one piece of a message under a memory budget (0: none, and no
// pieces: the largest index_t): half the budget in whole elements, at least one
// element. The same on every rank (the options and element size agree), so a
// sender's pieces are its receiver's.
inline index_t budget_piece(index_t budget, index_t elem_size) {
  if (budget <= 0) return std::numeric_limits<index_t>::max();
  return std::max(elem_size, budget / 2 / elem_size * elem_size);
}

// What a strategy that packs every message at once holds: all it sends and receives.
inline index_t packed_volume(const RankPlan& rp) { return rp.stats.bytes_sent + rp.stats.bytes_received; }

// The registry entry of strategy class S: each strategy file ends with
//   StrategyEntry NAME_strategy() { return entry<Class>("NAME", "summary", predict); }
template <class S>
StrategyEntry entry(std::string_view name, std::string_view summary, Prediction (*predict)(const RankPlan&, const Machine&),
                    std::string_view fallback = {}) {
  return {name, summary, fallback, [](PlanCore& p) -> std::unique_ptr<Strategy> { return std::make_unique<S>(p); },
          predict, nullptr};
}

// Every strategy, in the order --help and `all` list them.
const std::vector<StrategyEntry>& registry();
// Index into registry(), -1 when unknown.
int find_strategy(std::string_view name);
// Throws unless node_of is empty or names the node of rp's rank and of its peers
// (`what`: the caller, for the message).
void check_node_of(const RankPlan& rp, std::span<const int> node_of, const char* what);

}  // namespace redist::detail
