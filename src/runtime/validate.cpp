#include "validate.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "graph_walk.hpp"
#include "redist/error.hpp"

namespace redist::runtime::detail {
namespace {

std::string flow_name(const TaskClass& c, const Params& p, int f) {
  return cat(c.describe(p), ".", c.flow_at(f).name);
}

// How many OUT dependencies of producer (src, q, flow sf) name consumer (dst, p, flow df).
int count_sends(const TaskClass& src, const Params& q, int sf, const TaskClass& dst,
                const Params& p, int df) {
  int n = 0;
  for (const Dep& d : src.flow_at(sf).outs)
    if (d.end.task == &dst && d.flow_index == df && guard_holds(d, q) && d.end.targets(q).contains(p))
      ++n;
  return n;
}

std::string check_inputs(const TaskClass& c, const Params& p) {
  for (int f = 0; f < c.num_flows(); ++f) {
    const Dep* in = active_in(c.flow_at(f), p);
    if (!in) continue;
    if (in->end.collection) continue;  // local or remote: RemoteIo::visit
    const TaskClass& src = *in->end.task;
    Targets sources = in->end.targets(p);
    if (!c.flow_at(f).control && sources.size() != 1)
      return cat("invalid task graph: data input ", flow_name(c, p, f), " names ", sources.size(),
                 " producers of ", src.name(), "; a data flow has exactly one");
    std::string err;
    for_each_target(sources, [&](const Params& q) {
      if (!err.empty()) return;
      if (!src.in_space(q)) {
        err = cat("invalid task graph: input ", flow_name(c, p, f), " comes from ",
                  src.describe(q), ", which is outside the execution space of ", src.name(),
                  ": nobody produces it");
        return;
      }
      int n = count_sends(src, q, in->flow_index, c, p, f);
      if (n != 1)
        err = cat("invalid task graph: input ", flow_name(c, p, f), " comes from ",
                  flow_name(src, q, in->flow_index), ", which sends it ", n,
                  " times (exactly once expected)");
    });
    if (!err.empty()) return err;
  }
  return {};
}

std::string check_outputs(const TaskClass& c, const Params& p) {
  for (int f = 0; f < c.num_flows(); ++f) {
    for (const Dep& d : c.flow_at(f).outs) {
      if (!guard_holds(d, p)) continue;
      if (d.end.collection) continue;
      const TaskClass& dst = *d.end.task;
      std::string err;
      for_each_target(d.end.targets(p), [&](const Params& q) {
        if (!err.empty()) return;
        const Dep* in = dst.in_space(q) ? active_in(dst.flow_at(d.flow_index), q) : nullptr;
        if (!in || in->end.task != &c || in->flow_index != f || !in->end.targets(q).contains(p))
          err = cat("invalid task graph: output ", flow_name(c, p, f), " goes to ",
                    dst.in_space(q) ? flow_name(dst, q, d.flow_index) : dst.describe(q),
                    dst.in_space(q) ? ", whose input does not come from it"
                                    : ", which is outside its execution space");
      });
      if (!err.empty()) return err;
    }
  }
  return {};
}

// Whether any dependency of `c` names a collection (only those classes are visited
// for remote reads and writes).
bool names_collections(const TaskClass& c) {
  for (int f = 0; f < c.num_flows(); ++f)
    for (auto* deps : {&c.flow_at(f).ins, &c.flow_at(f).outs})
      for (const Dep& d : *deps)
        if (d.end.collection) return true;
  return false;
}

// The graph must be acyclic: a task that waits, through its inputs, on itself
// never runs, and neither does any task after it; the ranks would wait forever.
// Kahn's algorithm over every task of every rank (the same on every rank, and so
// is the message): "" or the cycle, named task by task.
std::string check_acyclic(const TaskGraph& graph) {
  std::vector<TaskKey> tasks;
  std::unordered_map<TaskKey, std::int64_t, TaskKeyHash> index;
  for (int id = 0; id < graph.num_classes(); ++id)
    for_each_point(graph.at(id), [&](const Params& p) {
      index.emplace(TaskKey{id, p}, static_cast<std::int64_t>(tasks.size()));
      tasks.push_back({id, p});
    });
  std::vector<std::pair<std::int64_t, std::int64_t>> edges;  // producer, consumer
  for (std::int64_t t = 0; t < static_cast<std::int64_t>(tasks.size()); ++t) {
    const TaskClass& c = graph.at(tasks[static_cast<std::size_t>(t)].cls);
    const Params& p = tasks[static_cast<std::size_t>(t)].p;
    for (int f = 0; f < c.num_flows(); ++f)
      for (const Dep& d : c.flow_at(f).outs) {
        if (!guard_holds(d, p) || d.end.collection) continue;
        const int dst = d.end.task->id();
        for_each_target(d.end.targets(p), [&](const Params& q) {
          const auto it = index.find(TaskKey{dst, q});
          if (it != index.end()) edges.push_back({t, it->second});
        });
      }
  }
  const auto n = static_cast<std::size_t>(tasks.size());
  std::vector<std::int64_t> waiting(n, 0);  // inputs not yet produced
  std::vector<std::vector<std::int64_t>> next(n), before(n);
  for (const auto& [from, to] : edges) {
    ++waiting[static_cast<std::size_t>(to)];
    next[static_cast<std::size_t>(from)].push_back(to);
    before[static_cast<std::size_t>(to)].push_back(from);
  }
  std::vector<std::int64_t> ready;
  for (std::size_t t = 0; t < n; ++t)
    if (waiting[t] == 0) ready.push_back(static_cast<std::int64_t>(t));
  std::size_t ran = 0;
  while (!ready.empty()) {
    const auto t = static_cast<std::size_t>(ready.back());
    ready.pop_back();
    ++ran;
    for (std::int64_t q : next[t])
      if (--waiting[static_cast<std::size_t>(q)] == 0) ready.push_back(q);
  }
  if (ran == n) return {};
  // Every task left waits on another task left: walking back from the first one
  // reaches a task seen before, and the tasks from there are a cycle.
  std::size_t t = 0;
  while (waiting[t] == 0) ++t;
  std::vector<std::int64_t> seen(n, -1), path;
  while (seen[t] < 0) {
    seen[t] = static_cast<std::int64_t>(path.size());
    path.push_back(static_cast<std::int64_t>(t));
    const auto left = [&](std::int64_t q) { return waiting[static_cast<std::size_t>(q)] > 0; };
    t = static_cast<std::size_t>(*std::find_if(before[t].begin(), before[t].end(), left));
  }
  std::vector<std::int64_t> cycle(path.begin() + seen[t], path.end());
  std::reverse(cycle.begin(), cycle.end());                             // producer before consumer
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // from its first task
  cycle.push_back(cycle.front());
  std::string names;
  constexpr std::size_t kShown = 8;
  for (std::size_t k = 0; k < cycle.size(); ++k) {
    if (k == kShown && cycle.size() > kShown + 1) {
      names += cat(" -> ... (", cycle.size() - 1 - kShown, " more)");
      break;
    }
    const TaskKey& key = tasks[static_cast<std::size_t>(cycle[k])];
    names += cat(k ? " -> " : "", graph.at(key.cls).describe(key.p));
  }
  return cat("invalid task graph: its dependencies form a cycle (", names, "): ", n - ran, " of its ", n,
             " tasks would wait forever");
}

}  // namespace

std::string validate_graph(const TaskGraph& graph, int rank, int ranks, bool check_edges,
                           std::int64_t& local_tasks, RemoteIo& io) {
  local_tasks = 0;
  std::int64_t total = 0;  // every rank's tasks
  std::string err;
  for (int id = 0; id < graph.num_classes() && err.empty(); ++id) {
    const TaskClass& c = graph.at(id);
    const bool collections = names_collections(c);
    for_each_point(c, [&](const Params& p) {
      if (!err.empty()) return;
      ++total;
      int r = c.rank_of(p);
      if (r < 0 || r >= ranks) {
        err = cat("invalid task graph: affinity of ", c.describe(p), " is rank ", r,
                  ", outside the communicator of ", ranks, " ranks");
        return;
      }
      if (collections) {
        err = io.visit(c, p, r);
        if (!err.empty()) return;
      }
      if (r != rank) return;
      ++local_tasks;
      if (check_edges) {
        err = check_inputs(c, p);
        if (err.empty()) err = check_outputs(c, p);
      }
    });
  }
  // Up to kCycleCheckMax tasks in all, the edges are walked once more for cycles.
  if (err.empty() && check_edges && total <= kCycleCheckMax) err = check_acyclic(graph);
  return err;
}

}  // namespace redist::runtime::detail
