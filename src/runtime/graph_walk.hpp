// Symbolic evaluation of a task graph: iterating execution spaces and dependency
// targets without ever unrolling the DAG (paper 004, sec. III-A).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "redist/error.hpp"
#include "redist/runtime/task_graph.hpp"

namespace redist::runtime::detail {

using ::redist::detail::cat;
using ::redist::detail::fail;

// A task ready to run, with the data of each of its flows.
struct ReadyTask {
  const TaskClass* cls = nullptr;
  Params params{};
  int priority = 0;
  std::vector<Data> flows;
};

// Calls f(params) for every point of the execution space of `c`, outer parameter
// first; inner bounds are evaluated with the outer parameters set.
template <class F>
void for_each_point(const TaskClass& c, F&& f) {
  const int n = c.num_params();
  Params p{};
  if (n == 0) {
    f(static_cast<const Params&>(p));
    return;
  }
  std::array<std::int64_t, kMaxParams> hi{};
  int level = 0;
  p[0] = c.lo(0, p);
  hi[0] = c.hi(0, p);
  while (level >= 0) {
    if (p[level] > hi[level]) {  // this level is exhausted: back to the outer one
      p[level] = 0;
      if (--level >= 0) ++p[level];
    } else if (level == n - 1) {
      f(static_cast<const Params&>(p));
      ++p[level];
    } else {
      ++level;
      p[level] = c.lo(level, p);
      hi[level] = c.hi(level, p);
    }
  }
}

// Calls f(params) for every task a Targets value names.
template <class F>
void for_each_target(const Targets& t, F&& f) {
  if (t.size() == 0) return;
  Params q{};
  for (int i = 0; i < t.count; ++i) q[i] = t.spans[i].lo;
  while (true) {
    f(static_cast<const Params&>(q));
    int i = t.count - 1;
    for (; i >= 0; --i) {
      if (q[i] < t.spans[i].hi) {
        ++q[i];
        break;
      }
      q[i] = t.spans[i].lo;
    }
    if (i < 0) return;
  }
}

inline bool guard_holds(const Dep& d, const Params& p) { return !d.guard || d.guard(p); }

// The IN dependency of `flow` that applies to task `p`: the first whose guard holds.
inline const Dep* active_in(const Flow& flow, const Params& p) {
  for (const Dep& d : flow.ins)
    if (guard_holds(d, p)) return &d;
  return nullptr;
}

}  // namespace redist::runtime::detail
