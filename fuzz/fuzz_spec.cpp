// fuzz_spec: bytes -> Layout::parse. A spec that parses must check() without
// fault for any communicator size, print a canonical spec() that parses back to
// an equal layout (docs/spec.md: Layout::parse(l.spec()) == l) and prints the
// same again; when valid, its storage map (LocalIndex) must give addresses
// inside the rank's storage. Every failure must be a redist::Error.
#include <climits>

#include "fuzz_common.hpp"

using namespace redist;
using fuzz::finding;

namespace {

// The first and last element of an owned tile must lie inside its block.
void check_addresses(const Layout& l, const LocalIndex& li, index_t ordinal, const std::string& spec) {
  const Coord t = li.tile(ordinal);
  if (li.ordinal(t) != ordinal) finding("LocalIndex::ordinal(tile(o)) != o for [" + spec + "]");
  const Box b = l.tile_box(t);
  if (b.empty()) return;
  Coord last = b.lo;
  for (int d = 0; d < l.ndim(); ++d) last[d] += b.size[d] - 1;
  for (const Coord& g : {b.lo, last}) {
    const Address a = li.address(t, g);
    if (a.block < 0 || a.block >= li.nblocks() || a.offset < 0 || a.offset >= li.block_elements(a.block))
      finding(detail::cat("element ", g.str(), " of tile ", t.str(), " is stored at block ", a.block, " offset ",
                          a.offset, ", outside the storage (", li.nblocks(), " blocks) of [", spec, "]"));
  }
}

void check_local_index(const Layout& l, int rank, const std::string& spec) {
  // General ownerships walk every tile of the array: keep that cheap. A
  // placement also walks its source's tiles once per patch grid line.
  if (!l.ownership().per_dimension()) {
    index_t tiles = 1;
    for (index_t n : l.ntiles())
      if (!fits_mul(tiles, n, tiles) || tiles > 4096) return;
  }
  if (l.ownership().kind() == Ownership::Kind::placement) {
    index_t tiles = 1;
    for (index_t n : l.ownership().plc().of->ntiles())
      if (!fits_mul(tiles, n, tiles) || tiles > 4096) return;
  }
  try {
    const LocalIndex li(l, rank);
    if (li.ntiles() > 0) {
      check_addresses(l, li, 0, spec);
      check_addresses(l, li, li.ntiles() - 1, spec);
    }
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Layout l;
  try {
    l = Layout::parse(text);
  } catch (const Error&) {
    return 0;
  }
  bool valid = false;
  for (int p : {1, 2, 3, 4, 64, INT_MAX}) valid |= l.check(p).empty();

  const std::string spec = l.spec();
  Layout back;
  try {
    back = Layout::parse(spec);
  } catch (const Error& e) {
    finding("the canonical spec [" + spec + "] of a parsed layout does not parse: " + e.what());
  }
  if (!(back == l)) finding("Layout::parse(l.spec()) != l for [" + spec + "] (reparsed: [" + back.spec() + "])");
  if (back.spec() != spec) finding("spec() is not canonical: [" + spec + "] prints again as [" + back.spec() + "]");
  if (back.hash() != l.hash()) finding("equal layouts hash differently: [" + spec + "]");

  if (valid) {
    check_local_index(l, 0, spec);
    check_local_index(l, l.ownership().ranks_needed() - 1, spec);
  }
  return 0;
}
