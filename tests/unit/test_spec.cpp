// Spec-string tests (docs/spec.md), no MPI:
//  - parsing each option and ownership, checked field by field on the accessors;
//  - values that are wrong but well-formed parse, and Layout::check reports them;
//  - a few hundred random layouts: written by an independent non-canonical writer
//    (shuffled options, explicit defaults, odd whitespace) and parsed back, and
//    printed by spec() and parsed back; compared field by field, not only with ==;
//  - syntax errors: the column, the expectation, and the caret under the column.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "redist/layout.hpp"

using namespace redist;

namespace {

using Rng = std::mt19937_64;

index_t uniform(Rng& rng, index_t lo, index_t hi) {  // inclusive
  return std::uniform_int_distribution<index_t>(lo, hi)(rng);
}

// Owner functions the specs below name; names with '.' and '-' check that a
// name is everything up to a space or a parenthesis.
void register_test_functions() {
  register_owner_function("test_sum_mod", [](const Coord& t) { return static_cast<int>((t[0] + t[1]) % 2); });
  register_owner_function("test.zero-owner", [](const Coord&) { return 0; });
}

// ------------------------------------------------ structural comparison (oracle)
// Field by field on the public accessors, so a lenient operator== cannot hide a
// parser or printer bug.
void expect_same(const Layout& a, const Layout& b, const std::string& ctx);

void expect_same(const Ownership& a, const Ownership& b, const std::string& ctx) {
  ASSERT_EQ(a.kind(), b.kind()) << ctx;
  switch (a.kind()) {
    case Ownership::Kind::block_cyclic:
      EXPECT_EQ(a.bc().grid, b.bc().grid) << ctx;
      EXPECT_EQ(a.bc().order, b.bc().order) << ctx;
      EXPECT_EQ(a.bc().source, b.bc().source) << ctx;
      EXPECT_EQ(a.bc().super, b.bc().super) << ctx;
      EXPECT_EQ(a.bc().first_rank, b.bc().first_rank) << ctx;
      ASSERT_EQ(!a.bc().map, !b.bc().map) << ctx;
      if (a.bc().map) {
        EXPECT_EQ(*a.bc().map, *b.bc().map) << ctx;
      }
      break;
    case Ownership::Kind::random:
      EXPECT_EQ(a.rnd().seed, b.rnd().seed) << ctx;
      EXPECT_EQ(a.rnd().ranks, b.rnd().ranks) << ctx;
      EXPECT_EQ(a.rnd().first_rank, b.rnd().first_rank) << ctx;
      break;
    case Ownership::Kind::band:
      EXPECT_EQ(a.bnd().width, b.bnd().width) << ctx;
      expect_same(*a.bnd().near, *b.bnd().near, ctx + " (near)");
      expect_same(*a.bnd().far, *b.bnd().far, ctx + " (far)");
      break;
    case Ownership::Kind::table:
      EXPECT_EQ(*a.tbl().owners, *b.tbl().owners) << ctx;
      break;
    case Ownership::Kind::function:
      EXPECT_EQ(a.fun().name, b.fun().name) << ctx;
      EXPECT_EQ(a.fun().ranks, b.fun().ranks) << ctx;
      EXPECT_TRUE(b.fun().fn) << ctx << ": parsed function ownership has no callable";
      break;
    case Ownership::Kind::placement:
      EXPECT_EQ(a.plc().rule, b.plc().rule) << ctx;
      expect_same(*a.plc().of, *b.plc().of, ctx + " (of)");
      break;
  }
}

void expect_same(const Layout& a, const Layout& b, const std::string& ctx) {
  ASSERT_EQ(a.shape(), b.shape()) << ctx;
  for (int d = 0; d < a.ndim(); ++d) {
    const DimPartition &p = a.partition(d), &q = b.partition(d);
    ASSERT_EQ(p.is_regular(), q.is_regular()) << ctx << " dim " << d;
    EXPECT_EQ(p.extent(), q.extent()) << ctx << " dim " << d;
    if (p.is_regular()) {
      EXPECT_EQ(p.tile(), q.tile()) << ctx << " dim " << d;
      EXPECT_EQ(p.offset(), q.offset()) << ctx << " dim " << d;
    } else {
      EXPECT_EQ(p.bounds(), q.bounds()) << ctx << " dim " << d;
    }
  }
  expect_same(a.ownership(), b.ownership(), ctx);
  EXPECT_EQ(a.storage().kind, b.storage().kind) << ctx;
  EXPECT_EQ(a.storage().ld, b.storage().ld) << ctx;
  EXPECT_EQ(a.elem_size(), b.elem_size()) << ctx;
  EXPECT_TRUE(a == b) << ctx;
}

// ------------------------------------------------ field-by-field parsing
TEST(SpecParse, ShapeOnlyGivesDefaults) {
  const Layout l = Layout::parse("8000x300");
  ASSERT_EQ(l.ndim(), 2);
  EXPECT_EQ(l.shape(), (Coord{8000, 300}));
  for (int d = 0; d < 2; ++d) {
    EXPECT_TRUE(l.partition(d).is_regular());
    EXPECT_EQ(l.partition(d).extent(), l.shape()[d]);
    EXPECT_EQ(l.partition(d).tile(), l.shape()[d]);  // whole extent, one tile
    EXPECT_EQ(l.partition(d).offset(), 0);
  }
  ASSERT_EQ(l.ownership().kind(), Ownership::Kind::block_cyclic);
  EXPECT_EQ(l.ownership().bc().grid, (Coord{1, 1}));
  EXPECT_EQ(l.ownership().bc().order, GridOrder::row);
  EXPECT_EQ(l.ownership().bc().source, (Coord{0, 0}));
  EXPECT_EQ(l.ownership().bc().super, (Coord{1, 1}));
  EXPECT_EQ(l.ownership().bc().first_rank, 0);
  EXPECT_EQ(l.storage().kind, StorageKind::tile);
  EXPECT_EQ(l.storage().ld, 0);
  EXPECT_EQ(l.elem_size(), 8);
  EXPECT_EQ(l.check(1), "");
}

TEST(SpecParse, ShapesOfOneToFourDimensions) {
  EXPECT_EQ(Layout::parse("100").shape(), (Coord{100}));
  EXPECT_EQ(Layout::parse("64x64x64").shape(), (Coord{64, 64, 64}));
  EXPECT_EQ(Layout::parse("1x2x3x4").shape(), (Coord{1, 2, 3, 4}));
  const Layout z = Layout::parse("0x5");  // an empty extent defaults to tile 1
  EXPECT_EQ(z.partition(0).tile(), 1);
  EXPECT_EQ(z.partition(1).tile(), 5);
  EXPECT_EQ(Layout::parse("  \t7x3\n").shape(), (Coord{7, 3}));  // surrounding whitespace
}

TEST(SpecParse, LayoutOptions) {
  const Layout l = Layout::parse("400x100x30 tile=[0,100,250,400]x25x7 offset=0x3x6 esize=16 "
                                 "storage=local_array ld=500");
  ASSERT_FALSE(l.partition(0).is_regular());
  EXPECT_EQ(l.partition(0).bounds(), (std::vector<index_t>{0, 100, 250, 400}));
  EXPECT_EQ(l.partition(0).extent(), 400);
  EXPECT_TRUE(l.partition(1).is_regular());
  EXPECT_EQ(l.partition(1).tile(), 25);
  EXPECT_EQ(l.partition(1).offset(), 3);
  EXPECT_EQ(l.partition(1).extent(), 100);
  EXPECT_EQ(l.partition(2).tile(), 7);
  EXPECT_EQ(l.partition(2).offset(), 6);
  EXPECT_EQ(l.elem_size(), 16);
  EXPECT_EQ(l.storage().kind, StorageKind::local_array);
  EXPECT_EQ(l.storage().ld, 500);
  EXPECT_EQ(Layout::parse("8 storage=tile_pointers").storage().kind, StorageKind::tile_pointers);
  EXPECT_EQ(Layout::parse("8 storage=tile").storage().kind, StorageKind::tile);
  // Layout keys may follow the ownership, and its options may follow them.
  const Layout m = Layout::parse("8x8 block_cyclic esize=4 grid=2x1 tile=2x2 order=col");
  EXPECT_EQ(m.elem_size(), 4);
  EXPECT_EQ(m.partition(0).tile(), 2);
  EXPECT_EQ(m.ownership().bc().grid, (Coord{2, 1}));
  EXPECT_EQ(m.ownership().bc().order, GridOrder::col);
}

TEST(SpecParse, BlockCyclic) {
  const Layout l = Layout::parse("8000x8000x10 tile=400x400x5 block_cyclic grid=2x3x1 order=col src=1x2x0 "
                                 "super=2x1x3 first=4");
  const BlockCyclicParams& p = l.ownership().bc();
  EXPECT_EQ(p.grid, (Coord{2, 3, 1}));
  EXPECT_EQ(p.order, GridOrder::col);
  EXPECT_EQ(p.source, (Coord{1, 2, 0}));
  EXPECT_EQ(p.super, (Coord{2, 1, 3}));
  EXPECT_EQ(p.first_rank, 4);
  EXPECT_EQ(l.check(10), "");
  EXPECT_EQ(Layout::parse("8x8 block_cyclic order=row").ownership().bc().order, GridOrder::row);
}

// map= places ranks on the grid in any order (BLACS Cblacs_gridmap): coordinate
// (i, j) of a 2x3 grid is entry i + 2j. The owners of all tiles, and every rank's
// grid coordinate, follow from it; ranks outside the map own nothing.
TEST(SpecParse, BlockCyclicRankMap) {
  const Layout l = Layout::parse("8x9 tile=2x1 block_cyclic grid=2x3 map=5,0,3,6,1,2 src=1x0");
  ASSERT_TRUE(l.ownership().bc().map);
  EXPECT_EQ(*l.ownership().bc().map, (std::vector<int>{5, 0, 3, 6, 1, 2}));
  EXPECT_EQ(l.check(7), "");
  EXPECT_NE(l.check(6), "");  // rank 6 is named: 7 ranks are needed
  EXPECT_EQ(l.ownership().ranks_needed(), 7);
  EXPECT_EQ(l.spec(), "8x9 tile=2x1 block_cyclic grid=2x3 src=1x0 map=5,0,3,6,1,2");
  const std::vector<int> map = {5, 0, 3, 6, 1, 2};
  for (index_t t0 = 0; t0 < 4; ++t0)
    for (index_t t1 = 0; t1 < 9; ++t1) {
      const index_t i = (t0 + 1) % 2, j = t1 % 3;  // src=1x0
      EXPECT_EQ(l.owner({t0, t1}), map[static_cast<size_t>(i + 2 * j)]) << t0 << "," << t1;
    }
  for (int r = 0; r < 8; ++r) {
    Coord c;
    const auto it = std::find(map.begin(), map.end(), r);
    ASSERT_EQ(l.ownership().grid_coord(r, c), it != map.end()) << r;
    if (it == map.end()) continue;
    EXPECT_EQ(l.ownership().rank_at(c), r);
    EXPECT_EQ(c[0] + 2 * c[1], it - map.begin());
  }
  // rank 4 is not in the grid: its storage is empty, local_array included
  const Layout la = Layout::parse("8x9 tile=2x1 storage=local_array block_cyclic grid=2x3 map=5,0,3,6,1,2");
  EXPECT_EQ(LocalIndex(la, 4).elements(), 0);
  EXPECT_EQ(LocalIndex(la, 5).elements(), 4 * 3);  // tiles 0 and 2 down, columns 0, 3, 6
}

TEST(SpecParse, BlockCyclicRankMapErrors) {
  const struct {
    const char* spec;
    const char* says;
  } cases[] = {
      {"8x8 block_cyclic grid=2x2 map=0,1,2", "lists 3 ranks, grid=2x2 has 4 coordinates"},
      {"8x8 block_cyclic grid=2x2 map=0,1,1,2", "names rank 1 twice"},
      {"8x8 block_cyclic grid=2x2 map=0,-1,2,3", "names rank -1, ranks are >= 0"},
      {"8x8 block_cyclic grid=2x2 map=0,1,2,3 first=1", "excludes first= and order="},
      {"8x8 block_cyclic grid=2x2 map=0,1,2,3 order=col", "excludes first= and order="},
  };
  for (const auto& c : cases) {
    const Layout l = Layout::parse(c.spec);
    EXPECT_NE(l.check(8).find(c.says), std::string::npos) << c.spec << " -> " << l.check(8);
  }
  EXPECT_THROW(Layout::parse("8x8 random map=0"), Error);  // not an option of random
  EXPECT_THROW(Layout::parse("8x8 block_cyclic grid=2x2 map="), Error);
}

TEST(SpecParse, Random) {
  const Layout l = Layout::parse("8000x8000 tile=100x300 random seed=7 ranks=3 first=2");
  const RandomParams& p = l.ownership().rnd();
  EXPECT_EQ(p.seed, 7u);
  EXPECT_EQ(p.ranks, 3);
  EXPECT_EQ(p.first_rank, 2);
  const Layout m = Layout::parse("8 random");
  const RandomParams& q = m.ownership().rnd();
  EXPECT_EQ(q.seed, 0u);
  EXPECT_EQ(q.ranks, 1);
  EXPECT_EQ(q.first_rank, 0);
  EXPECT_EQ(Layout::parse("8 random seed=18446744073709551615").ownership().rnd().seed, UINT64_MAX);
}

TEST(SpecParse, BandWithNestedOwnerships) {
  for (const char* s : {"8x8 tile=2x2 band width=1 near=(block_cyclic grid=2x2) far=(random seed=3 ranks=4)",
                        "8x8 tile=2x2 band width=1 near=( block_cyclic grid=2x2 ) far=(\trandom ranks=4 seed=3 )",
                        "8x8 tile=2x2 band far=(random seed=3 ranks=4) near=(block_cyclic grid=2x2) width=1"}) {
    const Layout l = Layout::parse(s);
    ASSERT_EQ(l.ownership().kind(), Ownership::Kind::band) << s;
    const BandParams& b = l.ownership().bnd();
    EXPECT_EQ(b.width, 1) << s;
    ASSERT_EQ(b.near->kind(), Ownership::Kind::block_cyclic) << s;
    EXPECT_EQ(b.near->bc().grid, (Coord{2, 2})) << s;
    ASSERT_EQ(b.far->kind(), Ownership::Kind::random) << s;
    EXPECT_EQ(b.far->rnd().seed, 3u) << s;
    EXPECT_EQ(b.far->rnd().ranks, 4) << s;
    EXPECT_EQ(l.check(4), "") << s;
  }
  // Bands nest: the near part is itself a band.
  const Layout n = Layout::parse("8x8 band near=(band width=2 near=(random ranks=2) far=(table owners=1)) far=(random)");
  EXPECT_EQ(n.ownership().bnd().width, 0);
  const Ownership& inner = *n.ownership().bnd().near;
  ASSERT_EQ(inner.kind(), Ownership::Kind::band);
  EXPECT_EQ(inner.bnd().width, 2);
  EXPECT_EQ(inner.bnd().near->rnd().ranks, 2);
  EXPECT_EQ(*inner.bnd().far->tbl().owners, std::vector<int>{1});
}

TEST(SpecParse, Table) {
  const Layout l = Layout::parse("4x4 tile=2x2 table owners=0,1,1,0");
  ASSERT_EQ(l.ownership().kind(), Ownership::Kind::table);
  EXPECT_EQ(*l.ownership().tbl().owners, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(l.owner({1, 0}), 1);  // column-major tile order
  EXPECT_EQ(l.check(2), "");
  EXPECT_TRUE(Layout::parse("4 table").ownership().tbl().owners->empty());
}

TEST(SpecParse, Function) {
  register_test_functions();
  const Layout l = Layout::parse("4x4 tile=2x2 function name=test_sum_mod ranks=2");
  ASSERT_EQ(l.ownership().kind(), Ownership::Kind::function);
  EXPECT_EQ(l.ownership().fun().name, "test_sum_mod");
  EXPECT_EQ(l.ownership().fun().ranks, 2);
  EXPECT_EQ(l.owner({1, 0}), 1);  // the registered callable is attached
  EXPECT_EQ(l.owner({1, 1}), 0);
  EXPECT_EQ(Layout::parse("4 function name=test.zero-owner").ownership().fun().ranks, 1);
}

TEST(SpecParse, Placement) {
  const Layout l =
      Layout::parse("64x64x64 tile=16x16x16 balanced of=( 64x64x64 tile=32x32x32 block_cyclic grid=2x2x2 )");
  ASSERT_EQ(l.ownership().kind(), Ownership::Kind::placement);
  EXPECT_EQ(l.ownership().plc().rule, PlacementRule::balanced);
  EXPECT_EQ(*l.ownership().plc().of, block_cyclic_layout({64, 64, 64}, {32, 32, 32}, {2, 2, 2}));
  EXPECT_EQ(l.ownership().ranks_needed(), 8);
  EXPECT_EQ(l.check(8), "");
  const Layout g = Layout::parse("64x64x64 tile=16x16x16 greedy of=(64x64x64 tile=32x32x32 block_cyclic grid=2x2x2)");
  EXPECT_EQ(g.ownership().plc().rule, PlacementRule::greedy);
  EXPECT_FALSE(g == l);
  EXPECT_EQ(g.owner({3, 3, 3}), 7);  // fully contained in rank 7's block
  // Placements nest: a placement over a placement.
  const Layout n =
      Layout::parse("8x8 tile=2x2 greedy of=(8x8 tile=4x4 balanced of=(8x8 tile=8x4 block_cyclic grid=1x2))");
  EXPECT_EQ(n.check(2), "");
  EXPECT_EQ(Layout::parse(n.spec()), n);
}

// Wrong values are not syntax errors: the layout is built and check() reports it.
TEST(SpecParse, WellFormedButInvalidValuesParse) {
  const char* cases[] = {
      "10x4 tile=-5x4",                         // negative tile
      "100 tile=0",                             // tile size 0
      "-3x4",                                   // negative extent
      "400 tile=[0,100,250]",                   // boundaries end before the extent
      "400 tile=[0,300,200,400]",               // not increasing
      "100 tile=10 offset=10",                  // offset not below the tile
      "8x8 block_cyclic grid=64x64",            // grid larger than the communicator
      "8x8 block_cyclic grid=0x2",              // empty grid
      "8x8 random ranks=-2",                    // negative rank count
      "8x8 tile=4x4 table owners=0,1",          // too few owners
      "8 band near=(random) far=(random)",      // band needs two dimensions
      "8 esize=0",                              // element size 0
  };
  for (const char* s : cases) {
    Layout l;
    ASSERT_NO_THROW(l = Layout::parse(s)) << s;
    EXPECT_NE(l.check(4), "") << s;
  }
  const Layout l = Layout::parse("10x4 tile=-5x4");
  EXPECT_EQ(l.partition(0).tile(), -5);
  EXPECT_EQ(Layout::parse("9223372036854775807 tile=-9223372036854775808").partition(0).tile(), INT64_MIN);
}

// ------------------------------------------------ printing
TEST(SpecPrint, CanonicalForms) {
  register_test_functions();
  EXPECT_EQ(block_cyclic_layout({8000, 8000}, {400, 400}, {2, 2}).spec(),
            "8000x8000 tile=400x400 block_cyclic grid=2x2");
  const std::pair<const char*, const char*> cases[] = {
      {"8000x8000 tile=100x300 random seed=7 ranks=3 storage=tile", "8000x8000 tile=100x300 random seed=7 ranks=3"},
      {"100", "100 tile=100 block_cyclic grid=1"},
      {"8x8 ld=9 storage=local_array tile=4x4 offset=0x1 esize=4 block_cyclic first=0 super=1x1 src=0x1 "
       "order=row grid=1x2",
       "8x8 tile=4x4 offset=0x1 esize=4 storage=local_array ld=9 block_cyclic grid=1x2 src=0x1"},
      {"400x8 tile=[0,100,400]x8 offset=0x0", "400x8 tile=[0,100,400]x8 block_cyclic grid=1x1"},
      {"8x8 band far=( random ranks=2 ) near=( block_cyclic grid=2x1 order=col )",
       "8x8 tile=8x8 band near=(block_cyclic grid=2x1 order=col) far=(random seed=0 ranks=2)"},
      {"8x8 function ranks=1 name=test_sum_mod", "8x8 tile=8x8 function name=test_sum_mod"},
      {"8x8 table owners=3", "8x8 tile=8x8 table owners=3"},
      {"8 storage=tile_pointers random first=1", "8 tile=8 storage=tile_pointers random seed=0 ranks=1 first=1"},
      {"8x8 tile=2x2 greedy of=(\t8x8  block_cyclic grid=2x1 tile=4x8 )",
       "8x8 tile=2x2 greedy of=(8x8 tile=4x8 block_cyclic grid=2x1)"},
      {"8x8 balanced of=(8x8 tile=[0,3,8]x8 band near=(random ranks=2) far=(table owners=1)) tile=2x2",
       "8x8 tile=2x2 balanced of=(8x8 tile=[0,3,8]x8 band near=(random seed=0 ranks=2) far=(table owners=1))"},
  };
  for (const auto& [in, out] : cases) {
    const Layout l = Layout::parse(in);
    EXPECT_EQ(l.spec(), out) << in;
    EXPECT_EQ(Layout::parse(l.spec()).spec(), out) << in;
  }
}

// ------------------------------------------------ random round trips
DimPartition random_partition(Rng& rng, index_t extent) {
  const int mode = static_cast<int>(uniform(rng, 0, 9));
  if (mode <= 2) {  // irregular, valid: 0 = b0 < ... < bn = extent
    std::vector<index_t> b{0};
    while (b.back() < extent) b.push_back(std::min(extent, b.back() + uniform(rng, 1, std::max<index_t>(1, extent / 2))));
    return DimPartition::irregular(b);
  }
  if (mode == 3) {  // irregular, invalid or empty: the parser must keep it anyway
    std::vector<index_t> b(static_cast<size_t>(uniform(rng, 0, 4)));
    for (index_t& x : b) x = uniform(rng, -5, 50);
    return DimPartition::irregular(b);
  }
  if (mode == 4) return DimPartition::regular(extent, uniform(rng, -3, 0), uniform(rng, -2, 5));  // invalid
  const index_t tile = uniform(rng, 1, std::max<index_t>(1, extent + 1));
  return DimPartition::regular(extent, tile, uniform(rng, 0, 1) ? uniform(rng, 0, tile - 1) : 0);
}

Coord random_coord(Rng& rng, int n, index_t lo, index_t hi) {
  Coord c(n);
  for (int d = 0; d < n; ++d) c[d] = uniform(rng, lo, hi);
  return c;
}

Ownership random_ownership(Rng& rng, int n, int depth) {
  switch (uniform(rng, 0, depth < 2 ? 4 : 3)) {
    case 0: {
      BlockCyclicParams p;
      p.grid = random_coord(rng, n, 0, 4);
      p.order = uniform(rng, 0, 1) ? GridOrder::row : GridOrder::col;
      if (uniform(rng, 0, 1)) p.source = random_coord(rng, n, 0, 3);  // else defaulted (empty)
      if (uniform(rng, 0, 1)) p.super = random_coord(rng, n, 1, 3);
      p.first_rank = static_cast<int>(uniform(rng, -1, 5));
      if (uniform(rng, 0, 2) == 0) {  // a rank map: any values, valid or not, one per coordinate or not
        std::vector<int> m(static_cast<size_t>(uniform(rng, 1, 8)));
        for (int& r : m) r = static_cast<int>(uniform(rng, -1, 9));
        p.map = std::make_shared<const std::vector<int>>(std::move(m));
      }
      return Ownership::block_cyclic(p);
    }
    case 1: {
      RandomParams p;
      p.seed = rng();
      p.ranks = static_cast<int>(uniform(rng, -1, 9));
      p.first_rank = static_cast<int>(uniform(rng, 0, 3));
      return Ownership::random(p);
    }
    case 2: {
      std::vector<int> owners(static_cast<size_t>(uniform(rng, 0, 12)));
      for (int& o : owners) o = static_cast<int>(uniform(rng, -1, 6));
      return Ownership::table(owners);
    }
    case 3: {
      const std::string name = uniform(rng, 0, 1) ? "test_sum_mod" : "test.zero-owner";
      return Ownership::function(name, static_cast<int>(uniform(rng, 0, 5)), find_owner_function(name));
    }
    default:
      return Ownership::band(uniform(rng, -1, 3), random_ownership(rng, n, depth + 1),
                             random_ownership(rng, n, depth + 1));
  }
}

Layout random_layout(Rng& rng, bool placement = true) {
  const int n = static_cast<int>(uniform(rng, 1, kMaxDims));
  Coord shape(n);
  std::vector<DimPartition> parts;
  for (int d = 0; d < n; ++d) {
    const int m = static_cast<int>(uniform(rng, 0, 19));
    shape[d] = m == 0 ? 0 : m == 1 ? uniform(rng, 1, index_t{1} << 50) : m == 2 ? -uniform(rng, 1, 9) : uniform(rng, 1, 60);
    parts.push_back(random_partition(rng, shape[d]));
  }
  Storage st;
  st.kind = static_cast<StorageKind>(uniform(rng, 0, 2));
  st.ld = uniform(rng, 0, 1) ? 0 : uniform(rng, -2, 1000);
  const index_t esize = uniform(rng, 0, 1) ? 8 : uniform(rng, -1, 64);
  // A placement over a source layout of the same shape (its own tiles and
  // ownership), or of another shape (well-formed, check() refuses it).
  if (placement && uniform(rng, 0, 6) == 0) {
    Layout of = random_layout(rng, false);
    if (uniform(rng, 0, 3)) {
      std::vector<DimPartition> src_parts;
      for (int d = 0; d < n; ++d) src_parts.push_back(random_partition(rng, shape[d]));
      of = Layout(shape, std::move(src_parts), random_ownership(rng, n, 0), of.storage(), of.elem_size());
    }
    const PlacementRule rule = uniform(rng, 0, 1) ? PlacementRule::greedy : PlacementRule::balanced;
    return Layout(shape, std::move(parts), Ownership::placement(rule, of), st, esize);
  }
  return Layout(shape, std::move(parts), random_ownership(rng, n, 0), st, esize);
}

std::string space(Rng& rng) {
  static const char* s[] = {" ", "  ", "\t", " \n ", "   "};
  return s[uniform(rng, 0, 4)];
}

template <class Range>
std::string join(const Range& r, const std::string& sep) {
  std::string s;
  for (const auto& x : r) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

// Independent of Layout::spec: every option spelled out (defaults included) in
// shuffled order. tokens[0] is the ownership keyword.
std::string write_noncanonical(const Layout& l, Rng& rng);

std::vector<std::string> ownership_tokens(const Ownership& o, Rng& rng) {
  std::vector<std::string> t;
  switch (o.kind()) {
    case Ownership::Kind::block_cyclic: {
      const auto& p = o.bc();
      t = {"block_cyclic", "grid=" + p.grid.str(), p.order == GridOrder::row ? "order=row" : "order=col",
           "src=" + p.source.str(), "super=" + p.super.str(), "first=" + std::to_string(p.first_rank)};
      if (p.map) t.push_back("map=" + join(*p.map, ","));
      break;
    }
    case Ownership::Kind::random:
      t = {"random", "seed=" + std::to_string(o.rnd().seed), "ranks=" + std::to_string(o.rnd().ranks),
           "first=" + std::to_string(o.rnd().first_rank)};
      break;
    case Ownership::Kind::band: {
      auto nested = [&](const Ownership& x) {
        std::string s = "(" + std::string(uniform(rng, 0, 1) ? " " : "");
        for (const std::string& tok : ownership_tokens(x, rng)) s += tok + space(rng);
        return s + ")";
      };
      t = {"band", "width=" + std::to_string(o.bnd().width), "near=" + nested(*o.bnd().near),
           "far=" + nested(*o.bnd().far)};
      break;
    }
    case Ownership::Kind::table:
      t = {"table"};
      if (!o.tbl().owners->empty()) t.push_back("owners=" + join(*o.tbl().owners, ","));
      break;
    case Ownership::Kind::function:
      t = {"function", "name=" + o.fun().name, "ranks=" + std::to_string(o.fun().ranks)};
      break;
    case Ownership::Kind::placement:
      t = {o.plc().rule == PlacementRule::greedy ? "greedy" : "balanced",
           "of=(" + space(rng) + write_noncanonical(*o.plc().of, rng) + ")"};
      break;
  }
  std::shuffle(t.begin() + 1, t.end(), rng);
  return t;
}

std::string write_noncanonical(const Layout& l, Rng& rng) {
  std::string tile = "tile=", offset = "offset=";
  for (int d = 0; d < l.ndim(); ++d) {
    const DimPartition& p = l.partition(d);
    const std::string x = d ? "x" : "";
    tile += x + (p.is_regular() ? std::to_string(p.tile()) : "[" + join(p.bounds(), ",") + "]");
    offset += x + std::to_string(p.is_regular() ? p.offset() : 0);
  }
  static const char* storage[] = {"storage=tile", "storage=local_array", "storage=tile_pointers"};
  std::vector<std::string> layout_tokens = {tile, offset, "esize=" + std::to_string(l.elem_size()),
                                            storage[static_cast<int>(l.storage().kind)],
                                            "ld=" + std::to_string(l.storage().ld)};
  std::shuffle(layout_tokens.begin(), layout_tokens.end(), rng);
  const std::vector<std::string> own = ownership_tokens(l.ownership(), rng);
  // Interleave: each list keeps its order (the ownership keyword stays first of its own).
  std::string s = (uniform(rng, 0, 1) ? space(rng) : "") + l.shape().str();
  size_t i = 0, j = 0;
  while (i < layout_tokens.size() || j < own.size()) {
    const bool take_layout = j == own.size() || (i < layout_tokens.size() && uniform(rng, 0, 1));
    s += space(rng) + (take_layout ? layout_tokens[i++] : own[j++]);
  }
  return s + (uniform(rng, 0, 1) ? space(rng) : "");
}

TEST(SpecRoundTrip, RandomLayouts) {
  register_test_functions();
  Rng rng(20240611);
  int irregular = 0, nested_band = 0;
  int kinds[6] = {}, storages[3] = {};
  for (int iter = 0; iter < 600; ++iter) {
    const Layout l = random_layout(rng);
    const std::string spec = l.spec();
    SCOPED_TRACE(spec);
    Layout p;
    ASSERT_NO_THROW(p = Layout::parse(spec));
    expect_same(l, p, "print->parse");
    EXPECT_EQ(p.spec(), spec) << "parse->print changed the string";
    EXPECT_EQ(p.hash(), l.hash());

    const std::string written = write_noncanonical(l, rng);
    Layout q;
    ASSERT_NO_THROW(q = Layout::parse(written)) << written;
    expect_same(l, q, "non-canonical parse of: " + written);
    EXPECT_EQ(q.spec(), spec) << written;

    for (int d = 0; d < l.ndim(); ++d) irregular += !l.partition(d).is_regular();
    ++kinds[static_cast<int>(l.ownership().kind())];
    ++storages[static_cast<int>(l.storage().kind)];
    if (l.ownership().kind() == Ownership::Kind::band)
      nested_band += l.ownership().bnd().near->kind() == Ownership::Kind::band ||
                     l.ownership().bnd().far->kind() == Ownership::Kind::band;
  }
  // The generator really covered every case.
  EXPECT_GT(irregular, 50);
  EXPECT_GT(nested_band, 5);
  for (int k : kinds) EXPECT_GT(k, 30);
  for (int s : storages) EXPECT_GT(s, 100);
}

// ------------------------------------------------ syntax errors
struct BadSpec {
  const char* spec;
  int column;
  const char* expect;  // a substring of the message
};

// Checks the "bad layout spec at column N: ..." line, the echo and the caret.
void expect_error(const BadSpec& c) {
  SCOPED_TRACE(c.spec);
  try {
    Layout::parse(c.spec);
    ADD_FAILURE() << "parsed, expected an error at column " << c.column;
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string head = "bad layout spec at column " + std::to_string(c.column) + ": ";
    EXPECT_EQ(msg.rfind(head, 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    std::string echo(c.spec), caret;
    std::replace(echo.begin(), echo.end(), '\n', ' ');
    for (int i = 0; i + 1 < c.column; ++i) caret += c.spec[i] == '\t' ? '\t' : ' ';
    const std::string tail = "\n  " + echo + "\n  " + caret + "^";
    EXPECT_TRUE(msg.size() >= tail.size() && msg.compare(msg.size() - tail.size(), tail.size(), tail) == 0)
        << msg;
  }
}

TEST(SpecErrors, ExampleFromTheDocs) {
  try {
    Layout::parse("8000x8000 grid=ax2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "bad layout spec at column 16: expected an integer after 'grid=', got 'ax2'\n"
                 "  8000x8000 grid=ax2\n"
                 "                 ^");
  }
}

TEST(SpecErrors, ColumnAndExpectation) {
  register_test_functions();
  const BadSpec cases[] = {
      // empty spec / missing shape
      {"", 1, "the spec is empty; expected the shape"},
      {"   ", 4, "the spec is empty"},
      {"tile=4", 1, "expected the shape (extents joined by 'x'"},
      {"1x1x1x1x1", 1, "at most 4 are supported"},
      // missing '='
      {"8000x8000 tile 400x400", 15, "expected '=' after 'tile', got a space"},
      {"8 block_cyclic grid", 20, "expected '=' after 'grid', got the end of the spec"},
      // bad integers
      {"8x8 tile=400xabc", 14, "expected an integer after 'tile=400x', got 'abc'"},
      {"8x8 block_cyclic grid=2x", 25, "expected an integer after 'grid=2x'"},
      {"8x8 tile=2x2y", 13, "expected 'x', a space or the end after 'tile=2x2', got 'y'"},
      {"8 esize=8x8", 10, "expected a space or the end after 'esize=8', got 'x8'"},
      {"100 tile=[0,50;100]", 15, "expected ',' or ']' after 'tile=[0,50'"},
      {"8 random seed=-1", 15, "expected an unsigned integer after 'seed='"},
      {"8 table owners=", 16, "expected an integer after 'owners=', got the end of the spec"},
      // overflow
      {"99999999999999999999", 1, "integer 99999999999999999999 does not fit in 64 bits"},
      {"10 esize=9223372036854775808", 10, "does not fit in 64 bits"},
      {"10 tile=-9223372036854775809", 9, "does not fit in 64 bits"},
      {"8 random seed=18446744073709551616", 15, "does not fit in 64 bits"},
      {"8 random ranks=4294967296", 16, "does not fit in a 32-bit int"},
      // wrong item count
      {"8000x8000 tile=400", 16, "expected 2 items (one per dimension of the shape 8000x8000) after 'tile=', got 1"},
      {"8 offset=1x2", 10, "expected 1 item (one per dimension of the shape 8) after 'offset=', got 2"},
      {"8x8x8 block_cyclic grid=2x2", 25, "expected 3 items"},
      // unknown keywords and values
      {"8 cyclic grid=2", 3, "unknown keyword 'cyclic'; expected a layout option"},
      {"8 random sead=2", 10, "unknown keyword 'sead'; expected a layout option (tile=, offset=, esize=, storage=, ld=) "
                              "or an option of random (first=, seed=, ranks=)"},
      {"8x8 =4", 5, "expected a layout option"},
      {"8 storage=disk", 11, "expected tile, local_array or tile_pointers after 'storage=', got 'disk'"},
      {"8 block_cyclic order=diag", 22, "expected row or col after 'order='"},
      {"8x8 band near=(rand) far=(random)", 16,
       "expected an ownership (block_cyclic, random, band, table, function, greedy, balanced) after '('"},
      // placements: of=( a whole layout spec ), columns counted in the outer spec
      {"8x8 tile=2x2 greedy", 14, "'greedy' needs of=(SOURCE LAYOUT SPEC)"},
      {"8x8 balanced of=8x8", 17, "expected '(' after 'of=' (e.g. of=("},
      {"8x8 greedy of=(8x8 tile=4x4", 28, "expected ')' to close the '(' at column 15"},
      {"8x8 greedy of=(8x8 tile=4x4 grid=2x2)", 29, "'grid=' is an option of block_cyclic"},
      {"8x8 greedy of=(8x8 tile=4)", 25, "expected 2 items"},
      {"8x8 band near=(greedy of=(8x8)) far=(random)", 16, "'greedy' places the layout's own tiles"},
      {"8x8 random of=(8x8)", 12, "'of=' is not an option of random"},
      // parentheses
      {"8x8 band far=(random) near=(block_cyclic grid=2x2", 50, "expected ')' to close the '(' at column 28"},
      {"8x8 block_cyclic grid=2x2)", 26, "unbalanced ')'"},
      {"8x8 band near=random far=(random)", 15, "expected '(' after 'near='"},
      {"8x8 band near=(random)far=(random)", 23, "expected a space or the end after 'near=(random)'"},
      // duplicates
      {"8x8 tile=2x2 tile=4x4", 14, "duplicate 'tile=' (already given at column 5)"},
      {"8x8 block_cyclic grid=2x2 grid=1x1", 27, "duplicate 'grid='"},
      {"8x8 random block_cyclic", 12, "a layout has one ownership, but 'block_cyclic' follows 'random' (column 5)"},
      {"8x8 band near=(random random) far=(random)", 23, "a layout has one ownership"},
      // functions
      {"8x8 function name=nope ranks=2", 19, "unknown owner function 'nope': it must be registered with register_owner_function"},
      {"8x8 function ranks=2", 5, "'function' needs name=NAME"},
      {"8x8 function name= ranks=2", 19, "expected a function name after 'name='"},
      // placement
      {"8x8 grid=2x2 block_cyclic", 5, "'grid=' is an option of block_cyclic and must come after its ownership keyword"},
      {"8x8 seed=1 random", 5, "'seed=' is an option of random and must come after"},
      {"8x8 random grid=2x2", 12, "'grid=' is not an option of random"},
      {"8x8 band near=(random ranks=2 grid=1x1) far=(random)", 31, "'grid=' is not an option of random"},
      {"8x8 band near=(random tile=2x2) far=(random)", 23, "'tile=' is a layout option; it cannot appear inside"},
      {"8x8 band near=(random)", 5, "'band' needs near=(OWNERSHIP) and far=(OWNERSHIP); far= is missing"},
      {"100 tile=[0,50,100] offset=3", 28, "offset applies to regular tiles only; dimension 0"},
      // whitespace other than spaces keeps the caret aligned
      {"8\tx", 3, "unknown keyword 'x'"},
  };
  for (const BadSpec& c : cases) expect_error(c);
}

}  // namespace

// Parentheses nested thousands deep overflowed the parser's stack (it recurses
// once per level; a CLI trial's 2,500 levels of greedy of=(...) crashed `redist
// plan`): more than 64 levels are refused with an error, at any depth.
TEST(SpecParse, NestingDepthIsBounded) {
  auto nested = [](int levels) {
    std::string s;
    for (int i = 0; i < levels; ++i) s += "8x8 tile=4x4 greedy of=(";
    s += "8x8 tile=4x4 block_cyclic grid=1x1";
    return s + std::string(static_cast<size_t>(levels), ')');
  };
  EXPECT_EQ(Layout::parse(nested(10)).ntiles(), Coord({2, 2}));
  for (int levels : {65, 3000}) {
    std::string what;
    try {
      Layout::parse(nested(levels));
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("parentheses nested more than 64 deep"), std::string::npos) << levels << ": " << what.substr(0, 200);
  }
}
