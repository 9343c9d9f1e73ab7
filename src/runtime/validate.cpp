#include "validate.hpp"

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

}  // namespace

std::string validate_graph(const TaskGraph& graph, int rank, int ranks, bool check_edges,
                           std::int64_t& local_tasks, RemoteIo& io) {
  local_tasks = 0;
  std::string err;
  for (int id = 0; id < graph.num_classes() && err.empty(); ++id) {
    const TaskClass& c = graph.at(id);
    const bool collections = names_collections(c);
    for_each_point(c, [&](const Params& p) {
      if (!err.empty()) return;
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
  return err;
}

}  // namespace redist::runtime::detail
