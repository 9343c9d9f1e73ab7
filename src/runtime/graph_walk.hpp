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

// A task of a graph as a hash-map key: its class's id and its parameters (the
// dependency table's, validation's cycle check).
struct TaskKey {
  int cls;
  Params p;
  bool operator==(const TaskKey&) const = default;
};
struct TaskKeyHash {
  std::size_t operator()(const TaskKey& k) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(k.cls + 1);
    for (std::int64_t v : k.p) h = (h ^ static_cast<std::uint64_t>(v)) * 0xff51afd7ed558ccdull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// A task ready to run, with the data of each of its flows.
struct ReadyTask {
  const TaskClass* cls = nullptr;
  Params params{};
  int priority = 0;
  std::vector<Data> flows;
  int lender = -1;            // a task another rank lent this one (Options::lend), or -1
  std::int64_t lend_id = 0;   // the lender's number for it
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

// A resumable walk over the execution space of `c`, in the order of for_each_point.
// Lets the workers of a rank share one enumeration: each claims chunks of
// consecutive points and skips the others (paper 004, sec. III-B).
class SpaceWalk {
 public:
  explicit SpaceWalk(const TaskClass& c) : c_(c), n_(c.num_params()) {}

  // Moves `k` >= 1 points forward; the walk starts before the first point, so
  // advance(1) lands on it. Returns false (for good) past the last point.
  bool advance(std::int64_t k) {
    if (done_) return false;
    if (n_ == 0) {  // a class without parameters has exactly one task
      done_ = started_ || k > 1;
      started_ = true;
      return !done_;
    }
    if (!started_) {
      started_ = true;
      level_ = 0;
      p_[0] = c_.lo(0, p_);
      hi_[0] = c_.hi(0, p_);
      if (!settle()) return false;
      --k;
    }
    const int last = n_ - 1;
    while (k > 0) {
      const std::int64_t room = hi_[last] - p_[last];  // points after this one in its row
      if (k <= room) {
        p_[last] += k;
        return true;
      }
      k -= room + 1;  // the first point of the next non-empty row is room + 1 away
      p_[last] = hi_[last] + 1;
      if (!settle()) return false;
    }
    return true;
  }
  const Params& params() const { return p_; }

 private:
  // From a position whose current level may be exhausted, moves to the next point.
  bool settle() {
    while (level_ >= 0) {
      if (p_[level_] > hi_[level_]) {
        p_[level_] = 0;
        if (--level_ >= 0) ++p_[level_];
      } else if (level_ == n_ - 1) {
        return true;
      } else {
        ++level_;
        p_[level_] = c_.lo(level_, p_);
        hi_[level_] = c_.hi(level_, p_);
      }
    }
    done_ = true;
    return false;
  }

  const TaskClass& c_;
  const int n_;
  Params p_{};
  std::array<std::int64_t, kMaxParams> hi_{};
  int level_ = 0;
  bool started_ = false, done_ = false;
};

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
