// Ready-task queues of one rank: one priority queue per worker thread, work
// stealing between them, and sleeping when there is nothing to do (paper 004,
// sec. III-B: each thread owns a waiting queue; idle threads steal from the others).
#pragma once

#include <atomic>
#include <climits>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph_walk.hpp"

namespace redist::runtime::detail {

// The order in which worker w looks at the other queues when stealing, given the
// NUMA node of each worker: first the workers of its own node, then the others, each
// group in ring order from w + 1 (paper 004, sec. III-B). Empty `node_of`: ring order.
std::vector<std::vector<int>> steal_order(int workers, const std::vector<int>& node_of);

class Scheduler {
 public:
  // `node_of`: NUMA node of each worker (empty: all the same), see steal_order.
  explicit Scheduler(int workers, const std::vector<int>& node_of = {});

  // Queues `task` on worker `worker`'s queue (worker < 0: round robin) and wakes a
  // sleeping worker. Any thread may call it.
  void push(int worker, ReadyTask&& task);
  // Queues all of `tasks` on `worker`'s queue under one lock (startup tasks a
  // worker enumerated) and empties `tasks`.
  void push_all(int worker, std::vector<ReadyTask>& tasks);
  // Pops the top of `worker`'s own queue if its priority is at least `min_priority`.
  bool pop_own_at_least(int worker, int min_priority, ReadyTask& task);
  // Pops the highest-priority task of `worker`'s own queue, or else steals the best
  // task of another queue. Returns false when all queues looked empty.
  bool pop(int worker, ReadyTask& task, bool& stolen);
  // Tasks queued in all (a snapshot).
  int queued() const;
  // Lending (Options::lend): when more than `keep` tasks are queued in all, takes
  // the one of lowest priority that `ok` accepts (the first queue that has one).
  bool take_lowest(int keep, const std::function<bool(const ReadyTask&)>& ok, ReadyTask& task);
  // Sleeps until a push or `wake_all`, at most ~1 ms (the caller re-checks its exit
  // conditions, which are not tied to this condition variable).
  void sleep();
  void wake_all();

 private:
  struct alignas(64) Queue {
    std::mutex mutex;
    std::vector<ReadyTask> heap;  // max-heap by priority
    std::atomic<int> size{0};
  };
  bool pop_from(Queue& q, ReadyTask& task, bool try_only, int min_priority = INT_MIN);
  void wake_one();

  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::vector<int>> victims_;  // per worker: queues to steal from, in order
  std::atomic<unsigned> next_{0};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace redist::runtime::detail
