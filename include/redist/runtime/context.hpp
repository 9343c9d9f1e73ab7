// What a task body sees when it runs: its parameters and the data on its flows
// (paper 004, sec. III-A: the body "holds the effective C-code").
#pragma once

#include <cstddef>
#include <string_view>

#include "redist/runtime/data.hpp"
#include "redist/runtime/params.hpp"

namespace redist::runtime {

class TaskClass;

// Outputs are the inputs by default (in-place update, as the JDF's RW flows);
// allocate() or Data::set_size() changes what goes out (paper 000, sec. 6.2.2).
class TaskContext {
 public:
  TaskContext(const TaskClass& cls, const Params& p, Data* flows, int rank, int thread)
      : cls_(cls), params_(p), flows_(flows), rank_(rank), thread_(thread) {}
  // All parameters; bodies take them by name instead (TaskClass::body).
  const Params& params() const { return params_; }
  int rank() const { return rank_; }
  int thread() const { return thread_; }
  // The data on a flow (by index or name); throws on an unknown name.
  Data& data(int flow) { return flows_[flow]; }
  Data& data(std::string_view flow);
  template <class T>
  T* as(std::string_view flow) {
    return data(flow).as<T>();
  }
  // Replaces the output of `flow` with a fresh buffer of `bytes` bytes.
  Data& allocate(std::string_view flow, std::size_t bytes);

 private:
  const TaskClass& cls_;
  const Params& params_;
  Data* flows_;
  int rank_, thread_;
};

}  // namespace redist::runtime
