// to_dot: the whole task graph as Graphviz DOT (docs/taskgraph.md's picture).
#include "redist/runtime/dot.hpp"

#include <sstream>

#include "graph_walk.hpp"

namespace redist::runtime {

namespace {
std::string node_id(const TaskClass& c, const Params& p) {
  std::string s = c.name();
  for (int i = 0; i < c.num_params(); ++i) {
    s += '_';
    s += std::to_string(p[i]);
  }
  return s;
}
const char* kFill[] = {"#fde0c5", "#c6dbef", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9"};
}  // namespace

std::string to_dot(TaskGraph& graph, int ranks) {
  if (std::string err = graph.resolve(); !err.empty()) detail::fail("to_dot: invalid task graph: ", err);
  std::ostringstream o;
  o << "digraph taskgraph {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=Helvetica];\n";
  auto rank_of = [ranks](const TaskClass& c, const Params& p) {
    const int r = c.has_affinity() ? c.rank_of(p) : 0;
    if (r < 0 || r >= ranks) detail::fail("to_dot: ", c.describe(p), " runs on rank ", r, " of ", ranks);
    return r;
  };
  for (int id = 0; id < graph.num_classes(); ++id) {
    const TaskClass& c = graph.at(id);
    detail::for_each_point(c, [&](const Params& p) {
      const int r = rank_of(c, p);
      o << "  " << node_id(c, p) << " [label=\"" << c.describe(p) << "\\nrank " << r << "\", fillcolor=\""
        << kFill[r % 6] << "\"];\n";
    });
  }
  for (int id = 0; id < graph.num_classes(); ++id) {
    const TaskClass& c = graph.at(id);
    detail::for_each_point(c, [&](const Params& p) {
      const int r = rank_of(c, p);
      for (int f = 0; f < c.num_flows(); ++f) {
        const Flow& flow = c.flow_at(f);
        for (const Dep& d : flow.outs) {
          if (!detail::guard_holds(d, p) || !d.end.task) continue;
          const TaskClass& t = *d.end.task;
          detail::for_each_target(d.end.targets(p), [&](const Params& q) {
            if (!t.in_space(q)) return;
            o << "  " << node_id(c, p) << " -> " << node_id(t, q) << " [label=\"" << flow.name << "\", color="
              << (rank_of(t, q) == r ? "red" : "blue") << (flow.control ? ", style=dashed" : "") << "];\n";
          });
        }
      }
    });
  }
  o << "}\n";
  return o.str();
}

}  // namespace redist::runtime
