// Input tracking for tasks that wait for some of their inputs: a hash table keyed
// by task id, an entry created when the first input arrives and removed when the
// last one does (paper 004, sec. III-B: "atomically marks in a shared structure
// which incoming dependencies are enabled").
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "graph_walk.hpp"

namespace redist::runtime::detail {

// Counts the inputs of (cls, p) that arrive later (a control input from a range
// counts once per producer; a tile of another rank's collection counts one) and
// fills `flows` with its local collection inputs. A task with a count of 0 is ready
// at startup.
std::int64_t prepare_inputs(const TaskClass& cls, const Params& p, int rank, std::vector<Data>& flows);

class DepTable {
 public:
  explicit DepTable(int rank) : rank_(rank) {}
  // Delivers `data` on flow `flow` of task (cls, p). Returns true, with `ready`
  // filled, when that was the last missing input.
  bool deliver(const TaskClass& cls, const Params& p, int flow, const Data& data, ReadyTask& ready);

 private:
  struct Entry {
    std::int64_t remaining = 0;
    std::vector<Data> flows;
  };
  struct alignas(64) Shard {
    std::mutex mutex;
    std::unordered_map<TaskKey, Entry, TaskKeyHash> map;
  };
  int rank_;
  std::array<Shard, 64> shards_;
};

}  // namespace redist::runtime::detail
