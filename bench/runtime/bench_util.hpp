// Small helpers shared by the runtime benchmarks: a flag parser, medians, MPI setup.
// Namespace redist::runtime_bench, so that the benchmarks can be linked into
// another program (runtime_benches.hpp).
#pragma once

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace redist::runtime_bench {

// Parses "--name value" and "--flag". With --help or -h, help() is true and rank 0
// has printed `usage`: the benchmark returns 0 without running.
class Args {
 public:
  Args(int argc, char** argv, const char* usage) : args_(argv + 1, argv + argc) {
    for (const auto& a : args_)
      if (a == "--help" || a == "-h") help_ = true;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (help_ && rank == 0) std::printf("%s", usage);
  }
  bool help() const { return help_; }
  std::int64_t get(const std::string& name, std::int64_t def) const {
    const std::string* v = find(name);
    return v ? std::atoll(v->c_str()) : def;
  }
  std::vector<std::int64_t> list(const std::string& name, std::vector<std::int64_t> def) const {
    const std::string* v = find(name);
    if (!v) return def;
    std::vector<std::int64_t> out;
    std::stringstream ss(*v);
    for (std::string item; std::getline(ss, item, ',');) out.push_back(std::atoll(item.c_str()));
    return out;
  }
  std::string str(const std::string& name, const std::string& def) const {
    const std::string* v = find(name);
    return v ? *v : def;
  }
  bool flag(const std::string& name) const {
    return std::find(args_.begin(), args_.end(), name) != args_.end();
  }

 private:
  const std::string* find(const std::string& name) const {
    for (std::size_t i = 0; i + 1 < args_.size(); ++i)
      if (args_[i] == name) return &args_[i + 1];
    return nullptr;
  }
  std::vector<std::string> args_;
  bool help_ = false;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The slowest rank's time is the time of a distributed run.
inline double max_over_ranks(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

// CPUs this process may run on. mpirun binds each rank to one core by default
// when it starts at most 2 ranks, so `-np 1` with 2 worker threads puts both on
// one core unless it is launched with `--bind-to none`.
inline int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// Prints the CPUs each rank may use, and a warning on ranks with fewer than
// `threads` (their threads would share cores and every ratio would be off).
inline void report_cpus(int threads) {
  int rank = 0, ranks = 1, mine = cpus_available(), least = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank != 0) return;
  std::printf("# cpus per rank (affinity): %d; threads per rank: %d\n", least, threads);
  if (least < threads)
    std::printf("# WARNING: fewer cpus than threads per rank: launch with mpirun --bind-to none\n");
}

// OpenBLAS's helper threads spin (sched_yield) for ~0.1 s (2^28 cycles,
// THREAD_TIMEOUT) after start-up and after every multi-threaded call before they
// sleep; a timing taken meanwhile loses a core. Call before timing anything and
// after a multi-threaded BLAS/LAPACK call.
inline void settle_blas() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return ranks;
}

}  // namespace redist::runtime_bench
