// How many random cases an MPI test runs and from which seed: a fast sample by
// default (`make test`), thousands under `make check-long` (ctest label `long`),
// and one case alone to replay a failure. Read from the environment, the same on
// every rank (mpirun passes it on):
//   REDIST_CASES=N  cases to run (default: the test's own count)
//   REDIST_SEED=S   base seed (default: the test's own)
//   REDIST_CASE=C   only case C (what a failure prints to replay it)
// Case c draws from its own generator, seeded from (S, c), so it is the same
// case whatever ran before it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "env_count.hpp"
#include "mpi_util.hpp"
#include "random_layout.hpp"

namespace redist::testing {

struct CaseRange {
  std::uint64_t seed;
  int first, end;  // cases [first, end)
};

inline CaseRange case_range(int default_cases, std::uint64_t default_seed) {
  CaseRange r{static_cast<std::uint64_t>(env_number("REDIST_SEED", static_cast<long long>(default_seed))), 0,
              static_cast<int>(env_number("REDIST_CASES", scaled_count(default_cases)))};
  if (const long long c = env_number("REDIST_CASE", -1); c >= 0) r.first = static_cast<int>(c), r.end = r.first + 1;
  if (world_rank() == 0)
    std::printf("    random cases %d..%d, REDIST_SEED=%llu\n", r.first, r.end - 1,
                static_cast<unsigned long long>(r.seed));
  return r;
}

// Case c's generator (splitmix64 of the seed and the case number).
inline Rng case_rng(std::uint64_t seed, int c) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(c) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return Rng(z ^ (z >> 31));
}

// The command that runs case c of the current test alone.
inline std::string replay_command(const CaseRange& r, int c) {
  char exe[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return "REDIST_SEED=" + std::to_string(r.seed) + " REDIST_CASE=" + std::to_string(c) + " scripts/mpirun.sh -np " +
         std::to_string(world_size()) + " " + (n > 0 ? exe : "TEST") + " --gtest_filter='" +
         (t ? std::string(t->test_suite_name()) + "." + t->name() : std::string("*")) + "'";
}

}  // namespace redist::testing
