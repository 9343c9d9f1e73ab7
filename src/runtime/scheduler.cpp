#include "scheduler.hpp"

#include <algorithm>
#include <chrono>

namespace redist::runtime::detail {
namespace {
bool lower_priority(const ReadyTask& a, const ReadyTask& b) { return a.priority < b.priority; }
}  // namespace

std::vector<std::vector<int>> steal_order(int workers, const std::vector<int>& node_of) {
  std::vector<std::vector<int>> order(static_cast<std::size_t>(workers));
  auto node = [&](int w) { return node_of.empty() ? 0 : node_of[static_cast<std::size_t>(w)]; };
  for (int w = 0; w < workers; ++w) {
    for (int same : {1, 0})
      for (int i = 1; i < workers; ++i) {
        const int v = (w + i) % workers;
        if ((node(v) == node(w)) == (same == 1)) order[static_cast<std::size_t>(w)].push_back(v);
      }
  }
  return order;
}

Scheduler::Scheduler(int workers, const std::vector<int>& node_of)
    : victims_(steal_order(workers, node_of)) {
  for (int i = 0; i < workers; ++i) queues_.push_back(std::make_unique<Queue>());
}

void Scheduler::push(int worker, ReadyTask&& task) {
  int n = static_cast<int>(queues_.size());
  Queue& q = *queues_[worker >= 0 ? worker % n : next_.fetch_add(1, std::memory_order_relaxed) % n];
  {
    std::lock_guard lock(q.mutex);
    q.heap.push_back(std::move(task));
    std::push_heap(q.heap.begin(), q.heap.end(), lower_priority);
    q.size.store(static_cast<int>(q.heap.size()), std::memory_order_release);
  }
  wake_one();
}

void Scheduler::push_all(int worker, std::vector<ReadyTask>& tasks) {
  if (tasks.empty()) return;
  Queue& q = *queues_[worker % static_cast<int>(queues_.size())];
  {
    std::lock_guard lock(q.mutex);
    const bool was_empty = q.heap.empty();
    for (ReadyTask& t : tasks) q.heap.push_back(std::move(t));
    if (was_empty)
      std::make_heap(q.heap.begin(), q.heap.end(), lower_priority);
    else
      for (auto it = q.heap.end() - static_cast<std::ptrdiff_t>(tasks.size()); it != q.heap.end();)
        std::push_heap(q.heap.begin(), ++it, lower_priority);
    q.size.store(static_cast<int>(q.heap.size()), std::memory_order_release);
  }
  tasks.clear();
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_all();
}

void Scheduler::wake_one() {
  if (sleepers_.load(std::memory_order_acquire) > 0) {
    std::lock_guard lock(sleep_mutex_);
    sleep_cv_.notify_one();
  }
}

bool Scheduler::pop_own_at_least(int worker, int min_priority, ReadyTask& task) {
  return pop_from(*queues_[worker], task, false, min_priority);
}

bool Scheduler::pop_from(Queue& q, ReadyTask& task, bool try_only, int min_priority) {
  if (q.size.load(std::memory_order_acquire) == 0) return false;
  std::unique_lock lock(q.mutex, std::defer_lock);
  if (try_only) {
    if (!lock.try_lock()) return false;
  } else {
    lock.lock();
  }
  if (q.heap.empty() || q.heap.front().priority < min_priority) return false;
  std::pop_heap(q.heap.begin(), q.heap.end(), lower_priority);
  task = std::move(q.heap.back());
  q.heap.pop_back();
  q.size.store(static_cast<int>(q.heap.size()), std::memory_order_release);
  return true;
}

bool Scheduler::pop(int worker, ReadyTask& task, bool& stolen) {
  stolen = false;
  if (pop_from(*queues_[worker], task, false)) return true;
  // Steal from the nearest other queues first: the same NUMA node, then the others.
  for (int v : victims_[static_cast<std::size_t>(worker)]) {
    if (pop_from(*queues_[v], task, true)) {
      stolen = true;
      return true;
    }
  }
  return false;
}

int Scheduler::queued() const {
  int n = 0;
  for (auto& q : queues_) n += q->size.load(std::memory_order_acquire);
  return n;
}

bool Scheduler::take_lowest(int keep, const std::function<bool(const ReadyTask&)>& ok, ReadyTask& task) {
  if (queued() <= keep) return false;
  for (auto& qp : queues_) {
    Queue& q = *qp;
    if (q.size.load(std::memory_order_acquire) == 0) continue;
    std::lock_guard lock(q.mutex);
    auto best = q.heap.end();
    for (auto it = q.heap.begin(); it != q.heap.end(); ++it)
      if ((best == q.heap.end() || it->priority < best->priority) && ok(*it)) best = it;
    if (best == q.heap.end()) continue;
    task = std::move(*best);
    *best = std::move(q.heap.back());
    q.heap.pop_back();
    std::make_heap(q.heap.begin(), q.heap.end(), lower_priority);
    q.size.store(static_cast<int>(q.heap.size()), std::memory_order_release);
    return true;
  }
  return false;
}

void Scheduler::sleep() {
  std::unique_lock lock(sleep_mutex_);
  sleepers_.fetch_add(1, std::memory_order_acq_rel);
  bool any = false;
  for (auto& q : queues_) any = any || q->size.load(std::memory_order_acquire) > 0;
  if (!any) sleep_cv_.wait_for(lock, std::chrono::milliseconds(1));
  sleepers_.fetch_sub(1, std::memory_order_acq_rel);
}

void Scheduler::wake_all() {
  std::lock_guard lock(sleep_mutex_);
  sleep_cv_.notify_all();
}

}  // namespace redist::runtime::detail
