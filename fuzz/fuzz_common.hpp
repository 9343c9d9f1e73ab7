// Shared by the libFuzzer targets (fuzz/CMakeLists.txt): the input format, owner
// functions a spec can name, and how a finding is reported.
//
// Contract under test: any input either succeeds or throws redist::Error. Any
// other exception escapes LLVMFuzzerTestOneInput and terminates (a finding);
// a wrong answer calls finding(), which aborts. libFuzzer then saves the input
// as crash-<sha1> and scripts/fuzz.sh prints how to replay it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "redist/layout.hpp"

namespace redist::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==== redist fuzz finding: %s\n", what.c_str());
  std::abort();
}

// Fields of an input, separated by '|' (a character no spec or region uses).
inline std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0;;) {
    const size_t j = s.find('|', i);
    if (j == std::string_view::npos) {
      out.push_back(s.substr(i));
      return out;
    }
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
}

// Owner functions a fuzzed spec can name (`function name=mod2 ranks=2`): a
// well-behaved one, one that answers a rank outside its range and one that
// throws something other than redist::Error (both must end as redist::Error).
inline const bool owner_functions_registered = [] {
  register_owner_function("mod2", [](const Coord& t) {
    index_t s = 0;
    for (index_t x : t) s += x & 1;
    return static_cast<int>(s & 1);
  });
  register_owner_function("bad", [](const Coord&) { return 1000; });
  register_owner_function("throws", [](const Coord&) -> int { throw std::runtime_error("owner function failed"); });
  return true;
}();

// True when the ownership (or one nested in a band) calls a user function.
inline bool uses_function(const Ownership& o) {
  if (o.kind() == Ownership::Kind::function) return true;
  if (o.kind() == Ownership::Kind::band) return uses_function(*o.bnd().near) || uses_function(*o.bnd().far);
  return false;
}

}  // namespace redist::fuzz
