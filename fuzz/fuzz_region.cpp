// fuzz_region: "REGION[|SRC_SPEC|DST_SPEC]" -> Region::parse (axes= too), the str() round
// trip, and Region::check against the shapes of the two specs (without them,
// against the region's own size) compared with an oracle computed in 128-bit
// arithmetic. Every failure must be a redist::Error.
#include "fuzz_common.hpp"
#include "redist/plan.hpp"

using namespace redist;
using fuzz::finding;

namespace {

bool same(const Region& a, const Region& b) {
  // axes: the identity is not printed (str() drops it), any other permutation is
  return a.size == b.size && a.src_offset == b.src_offset && a.dst_offset == b.dst_offset &&
         a.permutes() == b.permutes() && (!a.permutes() || a.axes == b.axes);
}

// What Region::check must say (docs/errors.md): fits both shapes, no negative
// size or offset; a zero-size region is valid wherever it stands.
// With axes: a permutation of the n dimensions (each once), and target dimension d
// of the size fits source dimension axes[d].
bool fits(const Region& r, const Coord& src, const Coord& dst) {
  const int n = src.ndim();
  if (dst.ndim() != n || r.size.ndim() != n || r.src_offset.ndim() != n || r.dst_offset.ndim() != n) return false;
  Coord ssize = r.size;
  if (r.axes.ndim() != 0) {
    if (r.axes.ndim() != n) return false;
    for (int d = 0; d < n; ++d) {
      if (r.axes[d] < 0 || r.axes[d] >= n) return false;
      for (int e = 0; e < d; ++e)
        if (r.axes[e] == r.axes[d]) return false;
    }
    for (int d = 0; d < n; ++d) ssize[static_cast<int>(r.axes[d])] = r.size[d];
  }
  bool empty = n == 0;
  for (int d = 0; d < n; ++d) {
    if (r.size[d] < 0 || r.src_offset[d] < 0 || r.dst_offset[d] < 0) return false;
    empty |= r.size[d] == 0;
  }
  if (empty) return true;
  for (int d = 0; d < n; ++d) {
    if (static_cast<__int128>(r.src_offset[d]) + ssize[d] > src[d]) return false;
    if (static_cast<__int128>(r.dst_offset[d]) + r.size[d] > dst[d]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto fields = fuzz::split({reinterpret_cast<const char*>(data), size});
  const std::string text(fields[0]);
  Region r;
  try {
    r = Region::parse(text);
  } catch (const Error&) {
    return 0;
  }
  Region back;
  try {
    back = Region::parse(r.str());
  } catch (const Error& e) {
    finding("Region::str() [" + r.str() + "] of a parsed region does not parse: " + e.what());
  }
  if (!same(r, back)) finding("Region::parse(r.str()) differs from r for [" + r.str() + "]");

  Coord src = r.size, dst = r.size;
  if (fields.size() >= 3) {
    try {
      src = Layout::parse(fields[1]).shape();
      dst = Layout::parse(fields[2]).shape();
    } catch (const Error&) {
      return 0;
    }
  }
  const std::string e = r.check(src, dst);
  if (e.empty() != fits(r, src, dst))
    finding("Region::check of [" + r.str() + "] against " + src.str() + " and " + dst.str() + " says '" + e +
            "', the oracle says it " + (fits(r, src, dst) ? "fits" : "does not fit"));
  if (e.empty() && !r.empty()) try {
      (void)r.size.volume();  // inside arrays that fit, but these shapes were never checked
    } catch (const Error&) {
    }
  return 0;
}
