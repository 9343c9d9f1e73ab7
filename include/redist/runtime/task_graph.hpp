// Parameterized task graphs (PTG) in plain C++ (paper 004, sec. III-A, the JDF
// format): task classes with an execution space, an affinity, data flows with
// guarded IN/OUT dependencies, control dependencies, a priority and a body. The
// graph is never unrolled: dependencies are functions of the task parameters and
// are evaluated on demand by the engine. How to write one: docs/runtime.md.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redist/runtime/collection.hpp"
#include "redist/runtime/context.hpp"
#include "redist/runtime/params.hpp"

namespace redist::runtime {

inline constexpr int kMaxFlows = 16;  // data + control flows of one task class

// One parameter of a dependency target: a single value or an inclusive range
// lo..hi (the JDF's `DTRSM(k, k+1..SIZE-1)`). An empty range (hi < lo) names no task.
struct Span {
  std::int64_t lo = 0, hi = 0;
  Span() = default;
  Span(std::int64_t v) : lo(v), hi(v) {}  // NOLINT: implicit on purpose, reads like JDF
  Span(std::int64_t l, std::int64_t h) : lo(l), hi(h) {}
};

// The parameters of the tasks a dependency names, one Span per parameter.
struct Targets {
  std::array<Span, kMaxParams> spans{};
  int count = 0;
  Targets() = default;
  Targets(std::initializer_list<Span> s);
  std::int64_t size() const;  // number of tasks named (product of span lengths)
  bool contains(const Params& p) const;
};

using Guard = ParamFn<bool>;
using TargetsFn = ParamFn<Targets>;
using TileFn = ParamFn<Tile>;

class TaskClass;

// Where a flow's data comes from or goes to: another task class's flow, or a data
// collection's tile. Built with from()/to() below.
struct Endpoint {
  const TaskClass* task = nullptr;  // task endpoint, or
  std::string flow;                 //   its flow name
  TargetsFn targets;
  const DataCollection* collection = nullptr;  // collection endpoint
  TileFn tile;
};

// IN: data of flow `flow` of task `task` with the parameters `targets` returns.
Endpoint from(const TaskClass& task, std::string flow, TargetsFn targets);
// IN: the tile `tile` returns, read from `collection`. A tile of another rank is
// sent by its owner at the start of the run (its value then; once per rank that
// reads it), so the task may run anywhere.
Endpoint from(const DataCollection& collection, TileFn tile);
// OUT: to flow `flow` of every task `targets` names (ranges allowed).
Endpoint to(const TaskClass& task, std::string flow, TargetsFn targets);
// OUT: final data, written back to `collection`; to a tile of another rank, the
// data is sent to its owner, which copies it into its storage before its run ends.
// A run writes a tile at most once.
Endpoint to(const DataCollection& collection, TileFn tile);

// A guarded dependency; an empty guard is always true.
struct Dep {
  Guard guard;
  Endpoint end;
  int flow_index = -1;  // resolved index of end.flow in end.task (set by the graph)
  int collection_index = -1;  // index of end.collection in the graph (set by the graph)
};

enum class Access { read, read_write };

// A named flow of a task class. Data flows carry bytes; control flows only order
// tasks (paper 000, sec. 6.2.1). The first IN dependency whose guard holds gives the
// input; every OUT dependency whose guard holds receives the output.
struct Flow {
  std::string name;
  bool control = false;
  Access access = Access::read_write;
  std::vector<Dep> ins;
  std::vector<Dep> outs;
  // An output flow's data arriving from another rank is received straight into the
  // Data this returns on the receiving rank (typed() or wrap() of its own memory),
  // not into a fresh buffer: the consumer finds it in place. Empty: a fresh buffer.
  ParamFn<Data> landing;
};

class GuardedFlow;

// Adds dependencies to one flow; returned by TaskClass::flow() and ::control().
// The JDF's `T <- (k == 0) ? A(k, k) : T DSYRK(k-1, k)` is
//   .in_if([](auto k) { return k == 0; }, from(A, ...)).otherwise(from(syrk, ...))
// and `-> (n == k+1) ? T DPOTRF(k+1) : T DSYRK(k+1, n)` is
//   .out_if([](auto k, auto n) { return n == k + 1; }, to(potrf, ...)).otherwise(to(syrk, ...)).
class FlowBuilder {
 public:
  FlowBuilder(TaskClass& task, int index) : task_(&task), index_(index) {}
  // The input, unless an earlier in_if's condition held.
  FlowBuilder& in(Endpoint source);
  // The input when `cond` holds (and no earlier in_if's did); .otherwise() names the
  // input when it does not. Several in_if in a row read as `c1 ? a : c2 ? b : ...`.
  GuardedFlow in_if(Guard cond, Endpoint source);
  // An output, always sent.
  FlowBuilder& out(Endpoint target);
  // An output sent when `cond` holds; .otherwise() names the one sent when it does not.
  GuardedFlow out_if(Guard cond, Endpoint target);
  // Where this output lands on a remote consumer's rank (Flow::landing), evaluated
  // there with the producer's parameters; it must have the size the producer sends.
  FlowBuilder& lands(ParamFn<Data> where);

 protected:
  TaskClass* task_;
  int index_;
};

// A flow right after in_if/out_if: `.otherwise(e)` adds the other branch of the
// condition, written once. Other calls continue the flow without one.
class GuardedFlow : public FlowBuilder {
 public:
  GuardedFlow(FlowBuilder b, Guard cond, bool input)
      : FlowBuilder(b), cond_(std::move(cond)), input_(input) {}
  FlowBuilder& otherwise(Endpoint e);

 private:
  Guard cond_;
  bool input_;
};

// A task class (a JDF function). Build with chained calls; see docs/runtime.md.
class TaskClass {
 public:
  TaskClass(int id, std::string name) : id_(id), name_(std::move(name)) {}

  // Appends a parameter ranging over lo..hi (inclusive); bounds may use the
  // parameters declared before it.
  TaskClass& param(std::string name, Bound lo, Bound hi);
  // The rank that runs a task (must be in [0, ranks) of the communicator).
  TaskClass& affinity(ParamFn<int> rank_of_task);
  // Runs a task where `collection` owns the tile `tile` returns.
  TaskClass& affinity(const DataCollection& collection, TileFn tile);
  // Higher runs first among ready tasks of a rank.
  TaskClass& priority(ParamFn<int> prio);
  FlowBuilder flow(std::string name, Access access = Access::read_write);
  FlowBuilder control(std::string name);
  // The task's code: a callable taking (TaskContext&, then the parameters by name),
  // e.g. [](TaskContext& c, auto k, auto n) { ... }.
  template <class F>
    requires(::redist::detail::param_arity<F, TaskContext&>() >= 0)
  TaskClass& body(F f) {
    constexpr int arity = ::redist::detail::param_arity<F, TaskContext&>();
    body_arity_ = arity;
    body_ = [f = std::move(f)](TaskContext& c) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        f(c, c.params()[I]...);
      }(std::make_index_sequence<arity>{});
    };
    return *this;
  }

  int id() const { return id_; }
  const std::string& name() const { return name_; }
  int num_params() const { return static_cast<int>(ranges_.size()); }
  const std::string& param_name(int i) const { return param_names_[i]; }
  int num_flows() const { return static_cast<int>(flows_.size()); }
  const Flow& flow_at(int i) const { return flows_[i]; }
  Flow& flow_at(int i) { return flows_[i]; }
  int flow_index(std::string_view name) const;  // -1 if none
  std::int64_t lo(int i, const Params& p) const { return ranges_[i].first.fn(p); }
  std::int64_t hi(int i, const Params& p) const { return ranges_[i].second.fn(p); }
  bool has_affinity() const { return static_cast<bool>(affinity_); }
  int rank_of(const Params& p) const { return affinity_(p); }
  bool has_priority() const { return static_cast<bool>(priority_); }
  int priority_of(const Params& p) const { return priority_ ? priority_(p) : 0; }
  const std::function<void(TaskContext&)>& body_fn() const { return body_; }
  bool in_space(const Params& p) const;
  std::string describe(const Params& p) const;  // "DGEMM(0, 2, 1)"
  // "" or the first function that takes more parameters than the class has.
  std::string check_arity() const;

 private:
  int id_;
  std::string name_;
  std::vector<std::string> param_names_;
  std::vector<std::pair<Bound, Bound>> ranges_;
  ParamFn<int> affinity_;
  ParamFn<int> priority_;
  std::vector<Flow> flows_;
  std::function<void(TaskContext&)> body_;
  int body_arity_ = 0;
};

// A set of task classes that reference each other. Task classes have stable
// addresses (declare them all first, then add dependencies).
class TaskGraph {
 public:
  TaskClass& task_class(std::string name);
  int num_classes() const { return static_cast<int>(classes_.size()); }
  const TaskClass& at(int id) const { return *classes_[id]; }
  // Resolves flow names and checks each class; returns "" or the first problem found.
  std::string resolve();
  // The data collections the flows name, in order of first appearance (class, flow,
  // dependency): the same numbering on every rank. Set by resolve().
  int num_collections() const { return static_cast<int>(collections_.size()); }
  const DataCollection& collection(int index) const { return *collections_[index]; }

 private:
  std::vector<std::unique_ptr<TaskClass>> classes_;
  std::vector<const DataCollection*> collections_;
};

}  // namespace redist::runtime
