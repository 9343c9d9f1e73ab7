// Parameterized task graphs (PTG) in plain C++ (paper 004, sec. III-A, the JDF
// format): task classes with an execution space, an affinity, data flows with
// guarded IN/OUT dependencies, control dependencies, a priority and a body. The
// graph is never unrolled: dependencies are functions of the task parameters and
// are evaluated on demand by the engine.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redist/runtime/collection.hpp"
#include "redist/runtime/data.hpp"

namespace redist::runtime {

inline constexpr int kMaxParams = 4;  // Send(ms, ns, mt, nt) of paper 000 needs four
inline constexpr int kMaxFlows = 16;  // data + control flows of one task class

// The parameters of one task, e.g. {k, m, n} for DGEMM(k, m, n); unused slots are 0.
using Params = std::array<std::int64_t, kMaxParams>;
using P = const Params&;  // short spelling for dependency lambdas

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

using Guard = std::function<bool(const Params&)>;
using TargetsFn = std::function<Targets(const Params&)>;
using TileFn = std::function<Tile(const Params&)>;
using IntFn = std::function<std::int64_t(const Params&)>;

// A bound of an execution-space range: a constant or a function of the outer
// parameters (the JDF's `n = k+1 .. SIZE-1`).
struct Bound {
  IntFn fn;
  Bound(std::int64_t c) : fn([c](const Params&) { return c; }) {}  // NOLINT
  Bound(int c) : Bound(static_cast<std::int64_t>(c)) {}            // NOLINT
  template <class F>
    requires std::invocable<F, const Params&> && (!std::integral<F>)
  Bound(F f) : fn(std::move(f)) {}  // NOLINT
};

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
// IN: the tile `tile` returns, read from `collection` (must be local to the task).
Endpoint from(const DataCollection& collection, TileFn tile);
// OUT: to flow `flow` of every task `targets` names (ranges allowed).
Endpoint to(const TaskClass& task, std::string flow, TargetsFn targets);
// OUT: final data, written back to `collection` (the tile must be local to the task).
Endpoint to(const DataCollection& collection, TileFn tile);

// A guarded dependency; an empty guard is always true.
struct Dep {
  Guard guard;
  Endpoint end;
  int flow_index = -1;  // resolved index of end.flow in end.task (set by the graph)
};

enum class Access { read, read_write };

// A named flow of a task class. Data flows carry bytes; control flows only order
// tasks (paper 000, sec. 6.2.1). The first IN dependency whose guard holds gives the
// input (the JDF's `(k == 0) ? A(k, k) : T DSYRK(k-1, k)`); every OUT dependency
// whose guard holds receives the output.
struct Flow {
  std::string name;
  bool control = false;
  Access access = Access::read_write;
  std::vector<Dep> ins;
  std::vector<Dep> outs;
};

class TaskContext;
using Body = std::function<void(TaskContext&)>;

// Adds dependencies to one flow; returned by TaskClass::flow() and ::control().
class FlowBuilder {
 public:
  FlowBuilder(TaskClass& task, int index) : task_(task), index_(index) {}
  FlowBuilder& in(Endpoint source);
  FlowBuilder& in(Guard guard, Endpoint source);
  FlowBuilder& out(Endpoint target);
  FlowBuilder& out(Guard guard, Endpoint target);

 private:
  TaskClass& task_;
  int index_;
};

// A task class (a JDF function). Build with chained calls; see docs/runtime.md.
class TaskClass {
 public:
  TaskClass(int id, std::string name) : id_(id), name_(std::move(name)) {}

  // Appends a parameter ranging over lo..hi (inclusive); bounds may use the
  // parameters declared before it.
  TaskClass& param(std::string name, Bound lo, Bound hi);
  // The rank that runs a task (must be in [0, ranks) of the communicator).
  TaskClass& affinity(std::function<int(const Params&)> rank_of_task);
  // Runs a task where `collection` owns the tile `tile` returns.
  TaskClass& affinity(const DataCollection& collection, TileFn tile);
  // Higher runs first among ready tasks of a rank.
  TaskClass& priority(std::function<int(const Params&)> prio);
  FlowBuilder flow(std::string name, Access access = Access::read_write);
  FlowBuilder control(std::string name);
  TaskClass& body(Body body);

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
  const Body& body_fn() const { return body_; }
  bool in_space(const Params& p) const;
  std::string describe(const Params& p) const;  // "DGEMM(0, 2, 1)"

 private:
  int id_;
  std::string name_;
  std::vector<std::string> param_names_;
  std::vector<std::pair<Bound, Bound>> ranges_;
  std::function<int(const Params&)> affinity_;
  std::function<int(const Params&)> priority_;
  std::vector<Flow> flows_;
  Body body_;
};

// A set of task classes that reference each other. Task classes have stable
// addresses (declare them all first, then add dependencies).
class TaskGraph {
 public:
  TaskClass& task_class(std::string name);
  int num_classes() const { return static_cast<int>(classes_.size()); }
  const TaskClass& at(int id) const { return *classes_[id]; }
  // Resolves flow names; returns an empty string or the first problem found.
  std::string resolve();

 private:
  std::vector<std::unique_ptr<TaskClass>> classes_;
};

// What a task body sees: its parameters and the data on its flows. Outputs are
// the inputs by default (in-place update, as the JDF's RW flows); allocate() or
// set_size() changes what goes out.
class TaskContext {
 public:
  TaskContext(const TaskClass& cls, const Params& p, Data* flows, int rank, int thread)
      : cls_(cls), params_(p), flows_(flows), rank_(rank), thread_(thread) {}
  const Params& params() const { return params_; }
  std::int64_t operator[](int i) const { return params_[i]; }
  int rank() const { return rank_; }
  int thread() const { return thread_; }
  // The data on a flow (by index or name); throws on an unknown name.
  Data& data(int flow) { return flows_[flow]; }
  Data& data(std::string_view flow);
  template <class T>
  T* as(std::string_view flow) {
    return data(flow).as<T>();
  }
  // Replaces the output of `flow` with a fresh buffer of `bytes` bytes.
  Data& allocate(std::string_view flow, std::size_t bytes);

 private:
  const TaskClass& cls_;
  const Params& params_;
  Data* flows_;
  int rank_, thread_;
};

}  // namespace redist::runtime
