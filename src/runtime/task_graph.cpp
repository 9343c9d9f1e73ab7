// Building parameterized task graphs (paper 004, sec. III-A).
#include "redist/runtime/task_graph.hpp"

#include <sstream>

#include "redist/error.hpp"

namespace redist::runtime {

Targets::Targets(std::initializer_list<Span> s) {
  if (s.size() > kMaxParams) detail::fail("Targets: at most ", kMaxParams, " parameters");
  for (const Span& x : s) spans[count++] = x;
}

std::int64_t Targets::size() const {
  std::int64_t n = 1;
  for (int i = 0; i < count; ++i) n *= spans[i].hi < spans[i].lo ? 0 : spans[i].hi - spans[i].lo + 1;
  return n;
}

bool Targets::contains(const Params& p) const {
  for (int i = 0; i < count; ++i)
    if (p[i] < spans[i].lo || p[i] > spans[i].hi) return false;
  return true;
}

Endpoint from(const TaskClass& task, std::string flow, TargetsFn targets) {
  return Endpoint{&task, std::move(flow), std::move(targets), nullptr, {}};
}
Endpoint from(const DataCollection& collection, TileFn tile) {
  return Endpoint{nullptr, {}, {}, &collection, std::move(tile)};
}
Endpoint to(const TaskClass& task, std::string flow, TargetsFn targets) {
  return from(task, std::move(flow), std::move(targets));
}
Endpoint to(const DataCollection& collection, TileFn tile) {
  return from(collection, std::move(tile));
}

FlowBuilder& FlowBuilder::in(Endpoint source) { return in(Guard{}, std::move(source)); }
FlowBuilder& FlowBuilder::in(Guard guard, Endpoint source) {
  task_.flow_at(index_).ins.push_back(Dep{std::move(guard), std::move(source)});
  return *this;
}
FlowBuilder& FlowBuilder::out(Endpoint target) { return out(Guard{}, std::move(target)); }
FlowBuilder& FlowBuilder::out(Guard guard, Endpoint target) {
  task_.flow_at(index_).outs.push_back(Dep{std::move(guard), std::move(target)});
  return *this;
}

TaskClass& TaskClass::param(std::string name, Bound lo, Bound hi) {
  if (num_params() == kMaxParams)
    detail::fail("task class ", name_, ": at most ", kMaxParams, " parameters");
  param_names_.push_back(std::move(name));
  ranges_.emplace_back(std::move(lo), std::move(hi));
  return *this;
}

TaskClass& TaskClass::affinity(std::function<int(const Params&)> rank_of_task) {
  affinity_ = std::move(rank_of_task);
  return *this;
}

TaskClass& TaskClass::affinity(const DataCollection& collection, TileFn tile) {
  affinity_ = [&collection, tile = std::move(tile)](const Params& p) {
    return collection.rank_of(tile(p));
  };
  return *this;
}

TaskClass& TaskClass::priority(std::function<int(const Params&)> prio) {
  priority_ = std::move(prio);
  return *this;
}

FlowBuilder TaskClass::flow(std::string name, Access access) {
  if (num_flows() == kMaxFlows) detail::fail("task class ", name_, ": at most ", kMaxFlows, " flows");
  flows_.push_back(Flow{std::move(name), false, access, {}, {}});
  return FlowBuilder(*this, num_flows() - 1);
}

FlowBuilder TaskClass::control(std::string name) {
  FlowBuilder b = flow(std::move(name), Access::read);
  flows_.back().control = true;
  return b;
}

TaskClass& TaskClass::body(Body body) {
  body_ = std::move(body);
  return *this;
}

int TaskClass::flow_index(std::string_view name) const {
  for (int i = 0; i < num_flows(); ++i)
    if (flows_[i].name == name) return i;
  return -1;
}

bool TaskClass::in_space(const Params& p) const {
  for (int i = 0; i < num_params(); ++i)
    if (p[i] < lo(i, p) || p[i] > hi(i, p)) return false;
  for (int i = num_params(); i < kMaxParams; ++i)
    if (p[i] != 0) return false;
  return true;
}

std::string TaskClass::describe(const Params& p) const {
  std::ostringstream os;
  os << name_ << "(";
  for (int i = 0; i < num_params(); ++i) os << (i ? ", " : "") << p[i];
  os << ")";
  return os.str();
}

TaskClass& TaskGraph::task_class(std::string name) {
  classes_.push_back(std::make_unique<TaskClass>(num_classes(), std::move(name)));
  return *classes_.back();
}

std::string TaskGraph::resolve() {
  for (auto& c : classes_) {
    for (int f = 0; f < c->num_flows(); ++f) {
      Flow& flow = c->flow_at(f);
      for (auto* deps : {&flow.ins, &flow.outs}) {
        for (Dep& d : *deps) {
          if (!d.end.task) continue;
          d.flow_index = d.end.task->flow_index(d.end.flow);
          if (d.flow_index < 0)
            return detail::cat("invalid task graph: flow ", c->name(), ".", flow.name,
                               " names flow '", d.end.flow, "' of ", d.end.task->name(),
                               ", which has no such flow");
          if (d.end.task->flow_at(d.flow_index).control != flow.control)
            return detail::cat("invalid task graph: flow ", c->name(), ".", flow.name,
                               " connects a data flow with a control flow (", d.end.task->name(),
                               ".", d.end.flow, ")");
        }
      }
    }
    if (!c->has_affinity())
      return detail::cat("invalid task graph: task class ", c->name(), " has no affinity");
    if (!c->body_fn()) return detail::cat("invalid task graph: task class ", c->name(), " has no body");
  }
  return {};
}

Data& TaskContext::data(std::string_view flow) {
  int f = cls_.flow_index(flow);
  if (f < 0 || cls_.flow_at(f).control)
    detail::fail("task ", cls_.describe(params_), " has no data flow named '", flow, "'");
  return flows_[f];
}

Data& TaskContext::allocate(std::string_view flow, std::size_t bytes) {
  Data& d = data(flow);
  d = Data::allocate(bytes);
  return d;
}

}  // namespace redist::runtime
