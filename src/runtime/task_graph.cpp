// Building parameterized task graphs (paper 004, sec. III-A).
#include "redist/runtime/task_graph.hpp"

#include <algorithm>
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

FlowBuilder& FlowBuilder::in(Endpoint source) {
  task_->flow_at(index_).ins.push_back(Dep{Guard{}, std::move(source)});
  return *this;
}
GuardedFlow FlowBuilder::in_if(Guard cond, Endpoint source) {
  task_->flow_at(index_).ins.push_back(Dep{cond, std::move(source)});
  return GuardedFlow(*this, std::move(cond), true);
}
FlowBuilder& FlowBuilder::out(Endpoint target) {
  task_->flow_at(index_).outs.push_back(Dep{Guard{}, std::move(target)});
  return *this;
}
FlowBuilder& FlowBuilder::lands(ParamFn<Data> where) {
  task_->flow_at(index_).landing = std::move(where);
  return *this;
}
GuardedFlow FlowBuilder::out_if(Guard cond, Endpoint target) {
  task_->flow_at(index_).outs.push_back(Dep{cond, std::move(target)});
  return GuardedFlow(*this, std::move(cond), false);
}

FlowBuilder& GuardedFlow::otherwise(Endpoint e) {
  if (input_) {
    // The first IN whose guard holds gives the input, so the other branch of
    // `cond ? a : b` needs no guard of its own.
    return in(std::move(e));
  }
  // Every OUT whose guard holds is sent: the other branch sends when cond does not hold.
  Guard negated = Guard::of_params([cond = cond_](const Params& p) { return !cond(p); }, cond_.arity());
  task_->flow_at(index_).outs.push_back(Dep{std::move(negated), std::move(e)});
  return *this;
}

TaskClass& TaskClass::param(std::string name, Bound lo, Bound hi) {
  if (num_params() == kMaxParams)
    detail::fail("task class ", name_, ": at most ", kMaxParams, " parameters");
  param_names_.push_back(std::move(name));
  ranges_.emplace_back(std::move(lo), std::move(hi));
  return *this;
}

TaskClass& TaskClass::affinity(ParamFn<int> rank_of_task) {
  affinity_ = std::move(rank_of_task);
  return *this;
}

TaskClass& TaskClass::affinity(const DataCollection& collection, TileFn tile) {
  const int arity = tile.arity();
  affinity_ = ParamFn<int>::of_params(
      [&collection, tile = std::move(tile)](const Params& p) { return collection.rank_of(tile(p)); }, arity);
  return *this;
}

TaskClass& TaskClass::priority(ParamFn<int> prio) {
  priority_ = std::move(prio);
  return *this;
}

FlowBuilder TaskClass::flow(std::string name, Access access) {
  if (num_flows() == kMaxFlows) detail::fail("task class ", name_, ": at most ", kMaxFlows, " flows");
  flows_.push_back(Flow{std::move(name), false, access, {}, {}, {}});
  return FlowBuilder(*this, num_flows() - 1);
}

FlowBuilder TaskClass::control(std::string name) {
  FlowBuilder b = flow(std::move(name), Access::read);
  flows_.back().control = true;
  return b;
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

std::string TaskClass::check_arity() const {
  const int n = num_params();
  auto too_many = [&](int arity, int allowed, const auto&... what) -> std::string {
    if (arity <= allowed) return {};
    return detail::cat("invalid task graph: ", what..., " takes ", arity, " parameters, but ",
                       allowed == n ? detail::cat(name_, " has ", n)
                                    : detail::cat("only the ", allowed, " before it are known"));
  };
  std::string err;
  auto first = [&](std::string e) {
    if (err.empty()) err = std::move(e);
  };
  for (int i = 0; i < n; ++i) {
    first(too_many(ranges_[i].first.fn.arity(), i, "the lower bound of ", name_, ".", param_names_[i]));
    first(too_many(ranges_[i].second.fn.arity(), i, "the upper bound of ", name_, ".", param_names_[i]));
  }
  first(too_many(affinity_.arity(), n, "the affinity of ", name_));
  first(too_many(priority_.arity(), n, "the priority of ", name_));
  first(too_many(body_arity_, n, "the body of ", name_));
  for (const Flow& f : flows_) {
    first(too_many(f.landing.arity(), n, "the landing of ", name_, ".", f.name));
    for (const auto* deps : {&f.ins, &f.outs})
      for (const Dep& d : *deps) {
        const char* dir = deps == &f.ins ? "an input" : "an output";
        first(too_many(d.guard.arity(), n, "the condition of ", dir, " of ", name_, ".", f.name));
        first(too_many(d.end.task ? d.end.targets.arity() : d.end.tile.arity(), n, dir, " of ", name_, ".",
                       f.name));
      }
  }
  return err;
}

std::string TaskGraph::resolve() {
  collections_.clear();
  for (auto& c : classes_) {
    if (std::string err = c->check_arity(); !err.empty()) return err;
    for (int f = 0; f < c->num_flows(); ++f) {
      Flow& flow = c->flow_at(f);
      for (auto* deps : {&flow.ins, &flow.outs}) {
        for (Dep& d : *deps) {
          if (d.end.collection) {
            auto at = std::find(collections_.begin(), collections_.end(), d.end.collection);
            d.collection_index = static_cast<int>(at - collections_.begin());
            if (at == collections_.end()) collections_.push_back(d.end.collection);
          }
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
