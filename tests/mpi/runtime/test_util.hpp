// Helpers shared by the runtime tests.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "redist/runtime/runtime.hpp"

namespace rt = redist::runtime;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
inline std::int64_t sum_all(std::int64_t v) {
  std::int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}
inline bool all_ranks(bool v) {
  int in = v ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return out == 1;
}
// True when `s` is the same string on every rank.
inline bool same_on_all(const std::string& s) {
  std::uint64_t h = std::hash<std::string>{}(s), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

// Every test runs with 1 and 2 worker threads and both communication modes.
using Config = std::tuple<int, rt::CommMode>;
inline rt::Options options_of(const Config& c) {
  rt::Options o;
  o.threads = std::get<0>(c);
  o.comm_mode = std::get<1>(c);
  return o;
}
inline std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  std::string name = std::get<0>(info.param) == 1 ? "t1" : "t2";
  name += std::get<1>(info.param) == rt::CommMode::multiple ? "_multiple" : "_funneled";
  return name;
}
#define RUNTIME_CONFIGS                                                                  \
  ::testing::Combine(::testing::Values(1, 2),                                            \
                     ::testing::Values(rt::CommMode::multiple, rt::CommMode::funneled)), \
      config_name
