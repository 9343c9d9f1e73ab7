// Test counts from the environment, with no dependency (the ScaLAPACK drop-in's
// test, which sees only the C headers, reads them too): env_number and
// scaled_count, for random_cases.hpp and tests/scalapack/test_dropin.cpp.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace redist::testing {

inline long long env_number(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* e = nullptr;
  const long long x = std::strtoll(v, &e, 10);
  if (*e || x < 0) {
    std::fprintf(stderr, "%s=%s: expected a non-negative integer\n", name, v);
    std::exit(2);
  }
  return x;
}

// A count of random cases or repetitions scaled by REDIST_CASE_PERCENT (default
// 100; at least 1). The sanitizer runs (scripts/check_sanitize.sh) take a part of
// every test's cases and rounds this way: the same generators, each case several
// times slower there. A test's number of random cases is REDIST_CASES if given,
// else its default scaled.
inline int scaled_count(int n) {
  const long long pct = env_number("REDIST_CASE_PERCENT", 100);
  return static_cast<int>(std::max<long long>(1, n * pct / 100));
}

}  // namespace redist::testing
