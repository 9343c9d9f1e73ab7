// fuzz_plan: "N|SRC|DST[|REGION]" -> a move of SRC to DST on N ranks
// (N = 1 + (first byte - '1') mod 4; no DST: SRC again; no REGION: the whole
// array), checked as make_plan would, planned for every rank and cross-checked
// (plan_check.hpp).
#include "plan_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto f = redist::fuzz::split({reinterpret_cast<const char*>(data), size});
  if (f.size() < 2) return 0;
  const int nranks = f[0].empty() ? 1 : ((f[0][0] - '1') % 4 + 4) % 4 + 1;
  redist::fuzz::check_move(nranks, f[1], f.size() > 2 ? f[2] : f[1],
                           f.size() > 3 ? std::optional<std::string_view>(f[3]) : std::nullopt);
  return 0;
}
