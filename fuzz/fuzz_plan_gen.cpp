// fuzz_plan_gen: bytes -> a generated move (two spec strings and a region, on
// 1-4 ranks), checked like fuzz_plan's (plan_check.hpp). The text fuzzers spend
// most inputs on syntax errors; here every input is well-formed, and the values
// are drawn where bugs live: small sizes, ragged and cyclic tiles, and integers
// at the edges of 32 and 64 bits (2^31, 2^62, INT64_MAX - 1, ...) in every
// field, so checked arithmetic on user-given sizes is exercised past the parser.
// A finding prints the move as a fuzz_plan input as well.
#include <fuzzer/FuzzedDataProvider.h>

#include <limits>

#include "plan_check.hpp"

namespace {

using redist::index_t;
using redist::detail::cat;

constexpr index_t kMax = std::numeric_limits<index_t>::max();
constexpr index_t kEdges[] = {kMax,
                              kMax - 1,
                              kMax / 2,
                              kMax / 2 + 1,
                              index_t{1} << 62,
                              index_t{1} << 32,
                              (index_t{1} << 31) - 1,
                              index_t{1} << 31,
                              3037000499,  // floor(sqrt(INT64_MAX))
                              3037000500,
                              std::numeric_limits<index_t>::min(),
                              -1};

// An integer for any field: mostly small, sometimes at (or just below) an edge.
index_t value(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 15)) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6:
      return p.ConsumeIntegralInRange<index_t>(1, 12);
    case 7: return 0;
    case 8: case 9: return p.ConsumeIntegralInRange<index_t>(13, 300);
    case 10: return p.PickValueInArray(kEdges);
    case 11: return std::max<index_t>(p.PickValueInArray(kEdges), 3) - p.ConsumeIntegralInRange<index_t>(0, 3);
    case 12: return -p.ConsumeIntegralInRange<index_t>(1, 3);
    case 13: return p.ConsumeIntegral<index_t>();
    default: return p.ConsumeIntegralInRange<index_t>(1, 4);
  }
}

std::string coord(FuzzedDataProvider& p, int n, index_t (*pick)(FuzzedDataProvider&)) {
  std::string s;
  for (int d = 0; d < n; ++d) s += cat(d ? "x" : "", pick(p));
  return s;
}

index_t grid_entry(FuzzedDataProvider& p) {
  return p.ConsumeIntegralInRange(0, 7) ? p.ConsumeIntegralInRange<index_t>(1, 2) : value(p);
}
index_t zero_mostly(FuzzedDataProvider& p) {
  return p.ConsumeIntegralInRange(0, 3) ? p.ConsumeIntegralInRange<index_t>(0, 2) : value(p);
}
index_t one_mostly(FuzzedDataProvider& p) { return p.ConsumeIntegralInRange(0, 3) ? 1 : value(p); }

std::string ownership(FuzzedDataProvider& p, int n, index_t ntiles, int depth) {
  // Half block_cyclic: the closed-form planner (plan/compressed.cpp) takes
  // block-cyclic layouts only and is the most intricate code under test.
  switch (p.ConsumeIntegralInRange(0, depth > 0 ? 6 : 7)) {
    case 0: case 1: case 2: case 3: {
      std::string s = "block_cyclic grid=" + coord(p, n, grid_entry);
      if (p.ConsumeBool()) s += p.ConsumeBool() ? " order=col" : " order=row";
      if (p.ConsumeBool()) s += " src=" + coord(p, n, zero_mostly);
      if (p.ConsumeBool()) s += " super=" + coord(p, n, one_mostly);
      if (p.ConsumeIntegralInRange(0, 3) == 0) s += cat(" first=", p.ConsumeBool() ? 1 : static_cast<int>(value(p)));
      return s;
    }
    case 4: {
      std::string s = cat("random seed=", p.ConsumeIntegral<std::uint64_t>(), " ranks=",
                          p.ConsumeIntegralInRange(0, 7) ? p.ConsumeIntegralInRange(1, 4) : static_cast<int>(value(p)));
      if (p.ConsumeIntegralInRange(0, 3) == 0) s += cat(" first=", p.ConsumeBool() ? 1 : static_cast<int>(value(p)));
      return s;
    }
    case 5: {  // one owner per tile, or a wrong count now and then
      const bool right = ntiles >= 0 && ntiles <= 256 && p.ConsumeIntegralInRange(0, 7);
      index_t count = right ? ntiles : p.ConsumeIntegralInRange<index_t>(0, 8);
      std::string s = "table";
      for (index_t i = 0; i < count; ++i)
        s += cat(i ? "," : " owners=", p.ConsumeIntegralInRange(0, 15) ? p.ConsumeIntegralInRange(0, 3)
                                                                       : static_cast<int>(value(p)));
      return s;
    }
    case 6: {
      static const char* const names[] = {"mod2", "mod2", "mod2", "bad", "throws"};
      return cat("function name=", p.PickValueInArray(names), " ranks=", p.ConsumeIntegralInRange(1, 4));
    }
    default:
      return cat("band width=", zero_mostly(p), " near=(", ownership(p, n, -1, depth + 1), ") far=(",
                 ownership(p, n, -1, depth + 1), ")");
  }
}

// A layout of `shape` (its extents given), every option drawn or left out.
std::string layout(FuzzedDataProvider& p, const std::vector<index_t>& shape) {
  const int n = static_cast<int>(shape.size());
  std::string s;
  for (int d = 0; d < n; ++d) s += cat(d ? "x" : "", shape[d]);
  index_t ntiles = 1;  // when every tile count is small and known, else -1
  if (p.ConsumeIntegralInRange(0, 7)) {
    s += " tile=";
    for (int d = 0; d < n; ++d) {
      if (d) s += "x";
      if (p.ConsumeIntegralInRange(0, 5) == 0) {  // explicit boundaries, usually ending at the extent
        std::string b = "[0";
        index_t at = 0, count = 0;
        while (at < shape[d] && count < 8 && p.remaining_bytes()) {
          at = p.ConsumeBool() && at >= 0 ? at + std::min(shape[d] - at, p.ConsumeIntegralInRange<index_t>(1, 5))
                                          : value(p);
          b += cat(",", at), ++count;
        }
        s += b + "]";
        ntiles = ntiles >= 0 ? ntiles * std::max<index_t>(count, 1) : -1;
      } else {
        const index_t t = value(p);
        s += cat(t);
        ntiles = ntiles >= 0 && t > 0 && shape[d] >= 0 && shape[d] / t < 64
                     ? ntiles * std::max<index_t>(1, shape[d] / t + (shape[d] % t != 0))
                     : -1;
      }
    }
  } else {
    ntiles = 1;
  }
  if (p.ConsumeIntegralInRange(0, 3) == 0) s += " offset=" + coord(p, n, zero_mostly);
  if (p.ConsumeIntegralInRange(0, 3) == 0)
    s += cat(" esize=", p.ConsumeBool() ? p.ConsumeIntegralInRange<index_t>(1, 24) : value(p));
  switch (p.ConsumeIntegralInRange(0, 5)) {
    case 0: s += " storage=local_array"; break;
    case 1: s += " storage=tile_pointers"; break;
    case 2: s += " storage=tile"; break;
    default: break;
  }
  if (p.ConsumeIntegralInRange(0, 5) == 0) s += cat(" ld=", value(p));
  if (p.ConsumeIntegralInRange(0, 7)) s += " " + ownership(p, n, ntiles, 0);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider p(data, size);
  const int nranks = p.ConsumeIntegralInRange(1, 4);
  const int n = p.ConsumeIntegralInRange(1, 4);
  std::vector<index_t> src_shape(n), dst_shape(n);
  for (auto& e : src_shape) e = p.ConsumeIntegralInRange(0, 3) ? p.ConsumeIntegralInRange<index_t>(0, 40) : value(p);
  dst_shape = src_shape;
  if (p.ConsumeIntegralInRange(0, 3) == 0)
    for (auto& e : dst_shape) e = p.ConsumeBool() ? p.ConsumeIntegralInRange<index_t>(0, 40) : value(p);
  const std::string src = layout(p, src_shape);
  const std::string dst = p.ConsumeIntegralInRange(0, 7) ? layout(p, dst_shape) : src;
  std::optional<std::string> region;
  if (p.ConsumeBool()) {  // offsets mostly small, the size often what is left of the smaller array
    std::vector<index_t> from(n), to(n), sz(n);
    for (int d = 0; d < n; ++d) {
      from[d] = p.ConsumeBool() ? 0 : zero_mostly(p);
      to[d] = p.ConsumeBool() ? 0 : zero_mostly(p);
      auto left = [](index_t extent, index_t at) { return at < 0 || at > extent ? 0 : extent - at; };
      sz[d] = p.ConsumeBool() ? std::min(left(src_shape[d], from[d]), left(dst_shape[d], to[d])) -
                                    p.ConsumeIntegralInRange<index_t>(0, 2)
                              : value(p);
    }
    std::string r, f, t;
    for (int d = 0; d < n; ++d) {
      const char* x = d ? "x" : "";
      r += cat(x, sz[d]), f += cat(x, from[d]), t += cat(x, to[d]);
    }
    region = r + " from=" + f + " to=" + t;
  }
  redist::fuzz::check_move(nranks, src, dst, region ? std::optional<std::string_view>(*region) : std::nullopt);
  return 0;
}
