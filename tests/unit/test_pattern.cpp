// The serial oracle (src/harness/pattern.hpp) against a plain reference written
// here element by element: fill_pattern writes pattern_element's bytes, and
// check_redistributed accepts exactly the expected contents and counts every
// wrong element, inside and outside the region, with a transposing region
// (source index stepping by a column) and ragged tiles. The oracle checks plans
// a chunk of elements at a time; this test holds it to the element-wise rule.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "harness/pattern.hpp"

using namespace redist;

namespace {

struct Storage1 {  // one rank's blocks
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<void*> ptr;
};

Storage1 allocate(const Layout& l, int rank) {
  const LocalIndex li(l, rank);
  Storage1 s;
  for (index_t b = 0; b < li.nblocks(); ++b) s.bytes.emplace_back(static_cast<size_t>(li.block_elements(b) * l.elem_size()));
  for (auto& v : s.bytes) s.ptr.push_back(v.data());
  return s;
}

// Calls f(global coordinate, element pointer) for every element the rank stores.
template <class F>
void each_element(const Layout& l, int rank, Storage1& s, F&& f) {
  const LocalIndex li(l, rank);
  for (index_t o = 0; o < li.ntiles(); ++o) {
    const Coord t = li.tile(o);
    const Box b = l.tile_box(t);
    for (index_t j = 0; j < b.size[1]; ++j)
      for (index_t i = 0; i < b.size[0]; ++i) {
        const Coord g({b.lo[0] + i, b.lo[1] + j});
        const Address a = li.address(t, g);
        f(g, s.bytes[static_cast<size_t>(a.block)].data() + a.offset * l.elem_size());
      }
  }
}

// The expected bytes of target element g: inside the region the source element it
// came from (target dimension d reads source dimension axes[d]), else the target's own.
std::vector<unsigned char> expected(const Layout& dst, const Layout& src, const Region& r, const Coord& g,
                                    std::uint64_t src_id, std::uint64_t dst_id, ElementType type) {
  std::vector<unsigned char> e(static_cast<size_t>(dst.elem_size()));
  bool in = !r.empty();
  for (int d = 0; d < 2; ++d) in = in && g[d] >= r.dst_offset[d] && g[d] < r.dst_offset[d] + r.size[d];
  if (!in) {
    pattern_element(dst_id, g[0] + g[1] * dst.shape()[0], dst.elem_size(), e.data(), type);
    return e;
  }
  Coord s(2);
  for (int d = 0; d < 2; ++d) s[r.src_dim(d)] = g[d] - r.dst_offset[d] + r.src_offset[r.src_dim(d)];
  pattern_element(src_id, s[0] + s[1] * src.shape()[0], dst.elem_size(), e.data(), type);
  return e;
}

struct Case {
  index_t es;
  ElementType type;
  StorageKind storage;
  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << "es " << c.es << ", type " << static_cast<int>(c.type) << ", storage "
        << (c.storage == StorageKind::tile ? "tile" : "local_array");
  }
};

class Oracle : public ::testing::TestWithParam<Case> {};

TEST_P(Oracle, MatchesElementWiseReference) {
  const Case c = GetParam();
  // Target 37x23 in ragged 5x4 tiles on a 2x2 grid; source 29x41. The region
  // (11x7 in the target's order) is transposed: target rows read source columns.
  const Layout dst = block_cyclic_layout({37, 23}, {5, 4}, {2, 2}, c.es, c.storage);
  const Layout src = block_cyclic_layout({29, 41}, {6, 9}, {1, 1}, c.es);
  Region r{Coord({11, 7}), Coord({3, 5}), Coord({20, 9})};
  r.axes = Coord({1, 0});
  for (int rank = 0; rank < 4; ++rank) {
    Storage1 s = allocate(dst, rank);
    // fill_pattern writes what pattern_element says, element by element.
    fill_pattern(dst, rank, s.ptr, 22, c.type);
    index_t n = 0;
    each_element(dst, rank, s, [&](const Coord& g, unsigned char* p) {
      const std::vector<unsigned char> e = expected(dst, src, Region{}, g, 11, 22, c.type);
      ASSERT_EQ(std::memcmp(e.data(), p, e.size()), 0) << "rank " << rank << " element " << g.str();
      ++n;
    });
    // The reference's redistributed contents pass, every element counted.
    std::vector<Coord> inside, outside;
    each_element(dst, rank, s, [&](const Coord& g, unsigned char* p) {
      const std::vector<unsigned char> e = expected(dst, src, r, g, 11, 22, c.type);
      std::memcpy(p, e.data(), e.size());
      bool in = true;
      for (int d = 0; d < 2; ++d) in = in && g[d] >= r.dst_offset[d] && g[d] < r.dst_offset[d] + r.size[d];
      (in ? inside : outside).push_back(g);
    });
    CheckResult ok = check_redistributed(dst, rank, s.ptr, r, src, 11, 22, Arithmetic{.type = c.type});
    EXPECT_TRUE(ok.ok()) << "rank " << rank << ": " << ok.first_error;
    EXPECT_EQ(ok.checked, n);
    // One wrong byte per corrupted element, inside and outside: each one counted,
    // the first one named with where it lies.
    int corrupted = 0;
    std::string first;
    each_element(dst, rank, s, [&](const Coord& g, unsigned char* p) {
      const bool pick = (!inside.empty() && (g == inside.front() || g == inside.back())) || g == outside.back() ||
                        (g[0] + 3 * g[1]) % 17 == 0;
      if (!pick) return;
      p[c.es - 1] ^= 0x40;
      if (corrupted++ == 0) first = g.str();
    });
    CheckResult bad = check_redistributed(dst, rank, s.ptr, r, src, 11, 22, Arithmetic{.type = c.type});
    EXPECT_EQ(bad.wrong, corrupted) << "rank " << rank;
    EXPECT_EQ(bad.checked, n);
    EXPECT_NE(bad.first_error.find("element " + first + " ("), std::string::npos) << bad.first_error;
    // check_pattern (the target's own pattern everywhere) counts what differs
    // from it, as the reference does.
    index_t differ = 0;
    each_element(dst, rank, s, [&](const Coord& g, unsigned char* p) {
      const std::vector<unsigned char> e = expected(dst, src, Region{}, g, 11, 22, c.type);
      differ += std::memcmp(e.data(), p, e.size()) != 0;
    });
    CheckResult own = check_pattern(dst, rank, s.ptr, 22, c.type);
    EXPECT_EQ(own.checked, n);
    EXPECT_EQ(own.wrong, differ) << "rank " << rank;
    EXPECT_GE(differ, static_cast<index_t>(inside.size()) / 2) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, Oracle,
                         ::testing::Values(Case{1, ElementType::bytes, StorageKind::local_array},
                                           Case{3, ElementType::bytes, StorageKind::tile},
                                           Case{8, ElementType::bytes, StorageKind::local_array},
                                           Case{8, ElementType::f64, StorageKind::tile},
                                           Case{16, ElementType::c128, StorageKind::local_array},
                                           Case{12, ElementType::bytes, StorageKind::tile}),
                         [](const auto& info) {
                           return "es" + std::to_string(info.param.es) + "_" + std::to_string(info.index);
                         });

}  // namespace
