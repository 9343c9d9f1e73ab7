// Helpers shared by the runtime tests.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "redist/redist.hpp"
#include "redist/runtime/collection.hpp"
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

// The message of the redist::Error that f() throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const redist::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Every test runs with 1 and 2 worker threads and the three communication modes.
using Config = std::tuple<int, rt::CommMode>;
inline rt::Options options_of(const Config& c) {
  rt::Options o;
  o.threads = std::get<0>(c);
  o.comm_mode = std::get<1>(c);
  return o;
}
inline std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  std::string name = std::get<0>(info.param) == 1 ? "t1" : "t2";
  const rt::CommMode m = std::get<1>(info.param);
  name += m == rt::CommMode::multiple ? "_multiple" : m == rt::CommMode::funneled ? "_funneled" : "_workers";
  return name;
}
#define RUNTIME_CONFIGS                                                          \
  ::testing::Combine(::testing::Values(1, 2),                                    \
                     ::testing::Values(rt::CommMode::multiple, rt::CommMode::funneled, \
                                       rt::CommMode::workers)),                  \
      config_name

// "owner(0),owner(1),...": the owners= list of a table ownership of `tiles` tiles.
template <class F>
std::string owner_list(int tiles, F owner) {
  std::string s;
  for (int t = 0; t < tiles; ++t) {
    if (t) s += ',';
    s += std::to_string(owner(t));
  }
  return s;
}

// The whole array of `a` on rank 0, column-major (dimension 0 fastest), moved there
// by the core's redistribution: a plan from a's layout to one tile on rank 0 (an
// oracle independent of the runtime). Other ranks get an empty vector. Collective.
template <class T>
std::vector<T> gather_on_root(const rt::LayoutCollection& a, MPI_Comm comm = MPI_COMM_WORLD) {
  const redist::Layout& src = a.layout();
  const redist::Layout dst = redist::block_cyclic_layout(src.shape(), src.shape(),
                                                         redist::Coord(src.ndim(), 1), src.elem_size());
  redist::Plan plan = redist::make_plan(src, dst, redist::Region::whole(src.shape()), comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<T> all(rank == 0 ? static_cast<std::size_t>(src.shape().volume()) : 0);
  plan.execute(a.elements<T>().data(), rank == 0 ? static_cast<void*>(all.data()) : nullptr);
  return all;
}
