// Small helpers shared by the runtime benchmarks: a flag parser, medians, MPI setup.
// Namespace redist::runtime_bench, so that the benchmarks can be linked into
// another program (runtime_benches.hpp).
#pragma once

#include <cblas.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redist/error.hpp"

namespace redist::runtime_bench {

// Parses "--name value" and "--flag". With --help or -h, help() is true and rank 0
// has printed `usage`: the benchmark returns 0 without running. The options are
// those `usage` lists, each line that starts (after spaces) with "--": what comes
// before the first double space is "--name [VALUE]" items separated by commas, a
// name followed by a value takes one, a name alone is a flag. An option `usage`
// does not list, an option without its value, a word that is no option's value
// ("-n 50"), a number that is not one ("1000x", "abc") or one below the minimum
// the benchmark gives throw redist::Error (the same on every rank: every rank
// parses the same command line), before anything runs.
class Args {
 public:
  Args(int argc, char** argv, const char* usage) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    for (const auto& a : args)
      if (a == "--help" || a == "-h") help_ = true;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (help_ && rank == 0) std::printf("%s", usage);
    if (help_) return;
    std::map<std::string, bool> takes_value;  // the options usage lists
    std::stringstream lines(usage);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t at = line.find_first_not_of(' ');
      if (at == std::string::npos || line.compare(at, 2, "--") != 0) continue;
      const std::string head = line.substr(at, line.find("  ", at) - at) + ", ";
      for (std::size_t from = 0, to; (to = head.find(", ", from)) != std::string::npos; from = to + 2) {
        const std::string item = head.substr(from, to - from);  // "--name" or "--name VALUE"
        const std::size_t space = item.find(' ');
        if (item.compare(0, 2, "--") == 0) takes_value[item.substr(0, space)] = space != std::string::npos;
      }
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      const auto known = takes_value.find(a);
      if (known == takes_value.end()) {
        if (a.compare(0, 2, "--") == 0 && std::string(usage).find(a + " ") != std::string::npos)
          throw redist::Error(a + " is not an option of this program: --help names it as mpirun's (give it to "
                              "mpirun, before the program)");
        if (a.compare(0, 2, "--") == 0) throw redist::Error("unknown option " + a + " (--help lists the options)");
        throw redist::Error("unexpected argument '" + a + "': options are --name or --name VALUE (--help lists them)");
      }
      // given twice: an error, as in `redist run` (the last value won without a word)
      if (values_.count(a) || std::find(flags_.begin(), flags_.end(), a) != flags_.end())
        throw redist::Error(a + " is given twice; give it once");
      if (!known->second) {
        flags_.push_back(a);
      } else if (i + 1 == args.size()) {
        throw redist::Error(a + " needs a value (--help lists the options)");
      } else {
        values_[a] = args[++i];
      }
    }
  }
  bool help() const { return help_; }
  // The integer value of `name` (def when absent), from `least` to `most`; "2e9" is
  // read as the integer it names.
  std::int64_t get(const std::string& name, std::int64_t def,
                   std::int64_t least = std::numeric_limits<std::int64_t>::min(),
                   std::int64_t most = std::numeric_limits<std::int64_t>::max()) const {
    const std::string* v = find(name);
    if (!v) return def;
    const std::int64_t x = number(name, *v, least);
    if (x > most)
      throw redist::Error(name + " must be at most " + std::to_string(most) + ", got " + std::to_string(x));
    return x;
  }
  // A count held in an int (threads, repetitions): from `least` to `most`, never
  // wrapped (--threads 4294967297 ran as 1 thread, 2147483648 said "got -2147483648").
  int count(const std::string& name, int def, int least, int most) const {
    return static_cast<int>(get(name, def, least, most));
  }
  std::vector<std::int64_t> list(const std::string& name, std::vector<std::int64_t> def,
                                 std::int64_t least = std::numeric_limits<std::int64_t>::min()) const {
    const std::string* v = find(name);
    if (!v) return def;
    std::vector<std::int64_t> out;
    // Every item, empty ones too: "500," and "500,,600" are refused, not read as "500"
    // and "500,600" (getline drops a trailing empty item).
    for (std::size_t from = 0;;) {
      const std::size_t comma = v->find(',', from);
      const std::string item = v->substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (item.empty()) throw redist::Error(name + " needs a comma-separated list of numbers, got '" + *v + "'");
      out.push_back(number(name, item, least));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    return out;
  }
  std::string str(const std::string& name, const std::string& def) const {
    const std::string* v = find(name);
    return v ? *v : def;
  }
  bool flag(const std::string& name) const { return std::find(flags_.begin(), flags_.end(), name) != flags_.end(); }
  // The process grid PxQ given as `name` (P x Q must be `ranks`; "2x1junk", "3x",
  // "0x2", "2x 1" and "+2x1" refused), or by default the closest to square with P <= Q.
  std::pair<int, int> grid(const std::string& name, int ranks) const {
    const std::string* v = find(name);
    if (!v) {
      int p = 1;
      for (int d = 1; d * d <= ranks; ++d)
        if (ranks % d == 0) p = d;
      return {p, ranks / p};
    }
    long long p = 0, q = 0;
    char end = 0;
    const bool digits = std::all_of(v->begin(), v->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == 'x'; });
    if (!digits || std::sscanf(v->c_str(), "%lldx%lld%c", &p, &q, &end) != 2 || p < 1 || q < 1 || p > ranks ||
        q > ranks || p * q != ranks)
      throw redist::Error(name + " must be PxQ with P x Q = " + std::to_string(ranks) + " ranks, got '" + *v + "'");
    return {static_cast<int>(p), static_cast<int>(q)};
  }

 private:
  static std::int64_t number(const std::string& name, const std::string& text, std::int64_t least) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE) {  // "2e9": a number written as a double
      const double d = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || d != std::floor(d) || std::fabs(d) > 9e18)
        throw redist::Error(name + " needs an integer, got '" + text + "'");
      v = static_cast<long long>(d);
    }
    if (v < least)
      throw redist::Error(name + " must be at least " + std::to_string(least) + ", got " + std::to_string(v));
    return v;
  }
  const std::string* find(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  std::map<std::string, std::string> values_;  // the last value given to each option
  std::vector<std::string> flags_;
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

// OpenBLAS picks its kernels by CPU model at start-up; a model newer than the
// library (Debian 12's 0.3.21 on family 6 model 207, or a VM that masks the model:
// "Intel(R) Xeon(R) Processor") gets its generic Prescott kernels: DGEMM at 7.7
// GFLOP/s on one core here against 55 with OPENBLAS_CORETYPE=SkylakeX, and
// redist-apps' potrf at N = 6000 23.8 GFLOP/s against 77. The kernels this CPU
// runs, or null where OpenBLAS's own choice stands (it knows the model, the user
// chose with OPENBLAS_CORETYPE, or the CPU has neither AVX-512 nor AVX2).
inline const char* better_blas_core() {
#if defined(__x86_64__)
  if (std::getenv("OPENBLAS_CORETYPE")) return nullptr;
  const std::string core = openblas_get_corename();
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Nehalem" ||
                       core == "Dunnington" || core == "Atom" || core == "Katmai" || core == "Northwood";
  if (!generic) return nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

// Called first in main, before MPI_Init: where OpenBLAS took its generic kernels
// on a CPU that has better ones, start this program again with OPENBLAS_CORETYPE
// naming them (OpenBLAS reads it when it loads, before main; the benchmarks had
// only warned, and every GFLOP/s they printed was ~3-7x low). Under mpirun each
// rank does so alike (the same CPU, the same answer) before MPI starts; the
// launcher sees the same process. REDIST_BLAS_CHOSEN tells report_cpus to say so.
inline void choose_blas_kernels(char** argv) {
  const char* core = better_blas_core();
  if (!core || std::getenv("REDIST_BLAS_CHOSEN")) return;  // chosen once: never a loop
  setenv("OPENBLAS_CORETYPE", core, 1);
  setenv("REDIST_BLAS_CHOSEN", core, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: run on, with the warning below
  unsetenv("OPENBLAS_CORETYPE");
}

inline void warn_generic_blas() {
  if (const char* chosen = std::getenv("REDIST_BLAS_CHOSEN"); chosen && std::getenv("OPENBLAS_CORETYPE"))
    std::printf("# OpenBLAS: this CPU's model is unknown to it; its %s kernels were chosen for it "
                "(OPENBLAS_CORETYPE=%s, set by this program; set it yourself to choose others)\n",
                chosen, std::getenv("OPENBLAS_CORETYPE"));
  if (const char* fast = better_blas_core())
    std::printf("# WARNING: OpenBLAS runs its generic %s kernels on this CPU (a model it does not know):\n"
                "#          BLAS is several times slower than it can be; export OPENBLAS_CORETYPE=%s\n",
                openblas_get_corename(), fast);
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
  warn_generic_blas();
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
