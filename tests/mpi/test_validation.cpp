// Collective validation (ARCHITECTURE.md, "Validate collectively, fail cleanly"):
// every kind of bad input must give the SAME clear redist::Error on every rank,
// never a hang, and leave the target untouched. Each test builds one bad input
// (often on one rank only), catches the error, gathers every rank's message and
// checks that every rank threw, that the messages are identical, and that the
// message names the offending value and what is allowed. Execute-time errors also
// check that the target still holds its pattern byte for byte.
//
// A hang is a failure: ctest's timeout catches it. Every case is tiny.
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>

#include "../common/mpi_util.hpp"
#include "harness/case.hpp"
#include "harness/pattern.hpp"
#include "harness/storage.hpp"
#include "redist/redist.hpp"
#include "redist/shm.hpp"

using namespace redist;
using namespace redist::testing;

namespace {

constexpr std::uint64_t kSrcId = 11, kDstId = 22;

struct Outcome {
  bool threw = false;
  std::string message;  // what() of the redist::Error, or a note for other exceptions
};

// Runs f and records whether it threw redist::Error. Any other exception is
// recorded as a failure text (it would not be "the same clear error").
Outcome capture(const std::function<void()>& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return {true, e.what()};
  } catch (const std::exception& e) {
    return {false, std::string("<not a redist::Error: ") + e.what() + ">"};
  }
}

// Every rank's string, in rank order (collective on MPI_COMM_WORLD).
std::vector<std::string> allgather_strings(const std::string& s) {
  const int p = world_size();
  int len = static_cast<int>(s.size());
  std::vector<int> lens(p), displs(p, 0);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < p; ++r) displs[r] = displs[r - 1] + lens[r - 1];
  std::string all(static_cast<size_t>(displs[p - 1] + lens[p - 1]), '\0');
  MPI_Allgatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < p; ++r) out.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(lens[r])));
  return out;
}

// The bad-input catalogue (docs/errors.md, written by scripts/errors_table.py):
// kind() names the input that the following checks feed in and where it is
// caught. With REDIST_SHOW_ERRORS=1 rank 0 prints each kind once, with the first
// message checked for it, as a tab-separated line "kind<TAB>input<TAB>where<TAB>
// message" (newlines in the message written as \n).
struct Kind {
  std::string input, where;
  bool shown = true;
};
Kind current_kind;
void kind(std::string input, std::string where) { current_kind = {std::move(input), std::move(where), false}; }

void show_kind(const std::string& message) {
  if (current_kind.shown) return;
  current_kind.shown = true;
  std::string m;
  for (char c : message) m += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::printf("kind\t%s\t%s\t%s\n", current_kind.input.c_str(), current_kind.where.c_str(), m.c_str());
}

// The core assertion of this file: every rank threw, all messages are equal, and
// the message contains every key word. Collective: call it on every rank.
void expect_same_error(const Outcome& o, const std::vector<std::string>& words) {
  const auto threw = allgather_strings(o.threw ? "1" : "0");
  const auto msgs = allgather_strings(o.message);
  for (int r = 0; r < world_size(); ++r) {
    EXPECT_EQ(threw[r], "1") << "rank " << r << " did not throw redist::Error"
                             << (msgs[r].empty() ? "" : ": " + msgs[r]);
    EXPECT_EQ(msgs[r], msgs[0]) << "rank " << r << "'s message differs from rank 0's";
  }
  // REDIST_SHOW_ERRORS=1 prints the catalogue, to review how the messages read.
  if (world_rank() == 0 && std::getenv("REDIST_SHOW_ERRORS")) show_kind(o.message);
  for (const std::string& w : words)
    EXPECT_NE(o.message.find(w), std::string::npos)
        << "message lacks '" << w << "':\n  " << o.message;
}

// make_plan on MPI_COMM_WORLD must fail the same way everywhere.
void expect_plan_error(const Layout& src, const Layout& dst, const Region& r,
                       const std::vector<std::string>& words, const Options& opt = {}) {
  expect_same_error(capture([&] { make_plan(src, dst, r, MPI_COMM_WORLD, opt); }), words);
}

std::string S(index_t v) { return std::to_string(v); }

// A small valid pair in which every rank owns data on both sides (for the
// execute-time tests): columns over ranks in the source, rows over ranks in the
// target, so every rank also sends and receives.
Layout cols_layout(StorageKind st = StorageKind::tile) {
  return block_cyclic_layout({8, 4 * world_size()}, {2, 2}, {1, world_size()}, 8, st);
}
Layout rows_layout(StorageKind st = StorageKind::tile) {
  return block_cyclic_layout({8, 4 * world_size()}, {2, 2}, {world_size(), 1}, 8, st);
}

// Everything on rank 0 of a 1x1 grid, except `grid`/`first` (bad ownerships).
Layout bc(Coord shape, Coord tile, Coord grid, int first = 0, StorageKind st = StorageKind::tile,
          index_t ld = 0, index_t esize = 8) {
  std::vector<DimPartition> parts;
  for (int d = 0; d < shape.ndim(); ++d) parts.push_back(DimPartition::regular(shape[d], tile[d]));
  BlockCyclicParams p;
  p.grid = grid;
  p.first_rank = first;
  return Layout(shape, std::move(parts), Ownership::block_cyclic(p), Storage{st, ld}, esize);
}

// The target after a failed execute must hold its own pattern, byte for byte;
// checked on every rank and agreed on.
void expect_untouched(const Layout& l, harness::LocalStorage& store, std::uint64_t id, const char* what) {
  CheckResult c = check_pattern(l, world_rank(), store.blocks(), id);
  EXPECT_TRUE(all_ok(c.ok())) << what << " changed on rank " << world_rank() << ": " << c.first_error;
}

// ------------------------------------------------------------------ make_plan errors

// Region::axes and Options::arithmetic (docs/transforms.md).
TEST(Validation, TransformErrors) {
  const Layout a = bc({6, 4}, {2, 2}, {1, 1}), b = bc({4, 6}, {2, 2}, {1, 1});
  kind("region axes= that are not a permutation of the dimensions", "Region::check in make_plan");
  expect_plan_error(a, b, Region{{4, 6}, {0, 0}, {0, 0}, {1, 1}}, {"axes=1,1", "once"});
  kind("a transposing region too large for the source", "Region::check in make_plan");
  expect_plan_error(a, b, Region{{4, 6}, {1, 0}, {0, 0}, {1, 0}}, {"leaves the source", "dimension 0"});
  Options o;
  o.arithmetic.type = ElementType::f32;
  kind("an element type whose size is not the layouts' element size", "make_plan (options.arithmetic)");
  expect_plan_error(a, a, Region::whole(a.shape()), {"f32 has 4 bytes", "8"}, o);
  o.arithmetic.type = ElementType::i64;
  o.arithmetic.alpha = 2.0;
  kind("alpha/beta on integer elements", "make_plan (options.arithmetic)");
  expect_plan_error(a, a, Region::whole(a.shape()), {"alpha=2 beta=0 on i64 elements", "integer elements move only"}, o);
  o.arithmetic.alpha = 1.0;
  o.arithmetic.conjugate = true;
  kind("a conjugate of opaque or integer elements", "make_plan (options.arithmetic)");
  expect_plan_error(a, a, Region::whole(a.shape()), {"conj needs complex elements", "integer elements"}, o);
  o.arithmetic.type = ElementType::bytes;
  expect_plan_error(a, a, Region::whole(a.shape()), {"conj needs complex elements", "opaque elements"}, o);
  o.arithmetic.conjugate = false;
  o.arithmetic.alpha = 2.0;
  o.arithmetic.type = ElementType::f64;
  o.arithmetic.beta = std::complex<double>(0, 1);
  kind("a complex alpha or beta on real elements", "make_plan (options.arithmetic)");
  expect_plan_error(a, a, Region::whole(a.shape()), {"beta=(0,1) is complex on real elements (f64)", "c64 or c128"}, o);
  o.arithmetic.alpha = std::complex<double>(2, -1), o.arithmetic.beta = 0;  // the one that is named
  expect_plan_error(a, a, Region::whole(a.shape()), {"alpha=(2,-1) is complex on real elements (f64)"}, o);
  o.arithmetic.beta = std::complex<double>(0, 1);
  expect_plan_error(a, a, Region::whole(a.shape()), {"alpha=(2,-1) and beta=(0,1) are complex"}, o);
  o.arithmetic.alpha = 2.0;
  o.arithmetic.beta = 0.5;
  o.strategy = "alltoallw";
  kind("alpha/beta with a strategy that does not unpack", "make_plan (options.strategy)");
  expect_plan_error(a, a, Region::whole(a.shape()), {"alltoallw", "cannot apply", "p2p"}, o);
}

TEST(Validation, RegionOutsideSource) {
  const Layout a = bc({10, 6}, {3, 3}, {1, 1}), b = bc({20, 20}, {4, 4}, {1, 1});
  kind("a region that leaves the source array", "Region::check in make_plan");
  expect_plan_error(a, b, Region{{5, 4}, {5, 3}, {0, 0}}, {"region 5x4 from=5x3 to=0x0", "leaves the source array 10x6", "dimension 1"});
  // Offset right at the end: size 1 from=10 does not fit 10 rows.
  expect_plan_error(a, b, Region{{1, 1}, {10, 0}, {0, 0}}, {"leaves the source array 10x6", "dimension 0"});
}

TEST(Validation, RegionOutsideTarget) {
  const Layout a = bc({20, 20}, {4, 4}, {1, 1}), b = bc({10, 6}, {3, 3}, {1, 1});
  kind("a region that leaves the target array", "Region::check in make_plan");
  expect_plan_error(a, b, Region{{8, 6}, {0, 0}, {3, 0}}, {"leaves the target array 10x6", "dimension 0"});
}

TEST(Validation, DimensionMismatch) {
  const Layout a2 = bc({6, 6}, {2, 2}, {1, 1}), a3 = bc({6, 6, 6}, {2, 2, 2}, {1, 1, 1});
  kind("source and target with different dimensions", "make_plan");
  expect_plan_error(a2, a3, Region::whole({6, 6}), {"dimension mismatch", "source has 2 dimensions", "target has 3"});
  // The region must have the arrays' dimension too.
  kind("a region with another dimension than the arrays", "Region::check in make_plan");
  expect_plan_error(a2, a2, Region::whole({6, 6, 1}), {"region 6x6x1", "must have 2 dimensions"});
  // The block_cyclic grid must have the layout's dimension.
  kind("a block_cyclic grid with another dimension than the layout", "Layout::check in make_plan");
  expect_plan_error(bc({6, 6}, {2, 2}, {1}), a2, Region::whole({6, 6}),
                    {"source layout", "grid has 1 dimensions, the layout has 2"});
}

TEST(Validation, GridLargerThanCommunicator) {
  const int p = world_size();
  const Layout ok = bc({8, 8}, {2, 2}, {1, 1});
  const Layout big = bc({8, 8}, {2, 2}, {p + 1, 1});
  kind("an ownership needing more ranks than the communicator has", "Layout::check in make_plan");
  expect_plan_error(big, ok, Region::whole({8, 8}),
                    {"source layout", "needs " + S(p + 1) + " ranks", "communicator has " + S(p)});
  expect_plan_error(ok, bc({8, 8}, {2, 2}, {2, p}), Region::whole({8, 8}),
                    {"target layout", "needs " + S(2 * p) + " ranks", "communicator has " + S(p)});
  kind("a block_cyclic grid entry < 1", "Layout::check in make_plan");
  expect_plan_error(bc({8, 8}, {2, 2}, {0, 1}), ok, Region::whole({8, 8}), {"grid=0x1", "must be >= 1"});
}

TEST(Validation, OwnerRankOutsideCommunicator) {
  const int p = world_size();
  const Layout ok = bc({8, 8}, {2, 2}, {1, 1});
  // block_cyclic first=P: grid coordinate 0 is rank P.
  kind("block_cyclic first= beyond the communicator", "Layout::check in make_plan");
  expect_plan_error(bc({8, 8}, {2, 2}, {1, 1}, p), ok, Region::whole({8, 8}),
                    {"needs " + S(p + 1) + " ranks", "communicator has " + S(p)});
  kind("a negative block_cyclic first=", "Layout::check in make_plan");
  expect_plan_error(bc({8, 8}, {2, 2}, {1, 1}, -1), ok, Region::whole({8, 8}), {"first=-1", "must be >= 0"});
  // random first + ranks beyond the communicator.
  kind("random first= + ranks= beyond the communicator", "Layout::check in make_plan");
  expect_plan_error(ok, Layout::parse("8x8 tile=2x2 random seed=3 ranks=2 first=" + S(p)), Region::whole({8, 8}),
                    {"target layout", "needs " + S(p + 2) + " ranks", "communicator has " + S(p)});
  // A table owner equal to the communicator size.
  kind("a table owner equal to the communicator size", "Layout::check in make_plan");
  expect_plan_error(Layout::parse("4x4 tile=2x2 table owners=0,0,0," + S(p)), ok, Region::whole({4, 4}),
                    {"needs " + S(p + 1) + " ranks", "communicator has " + S(p)});
  kind("a negative table owner", "Layout::check in make_plan");
  expect_plan_error(Layout::parse("4x4 tile=2x2 table owners=0,-2,0,0"), ok, Region::whole({4, 4}),
                    {"table owner of tile 1 is -2", "must be >= 0"});
  // Owners near INT_MAX must not overflow the rank count into something that fits.
  kind("owner ranks near INT_MAX (the rank count overflows int)", "Layout::check in make_plan");
  expect_plan_error(bc({8, 8}, {2, 2}, {1, 1}, INT_MAX), ok, Region::whole({8, 8}),
                    {"source layout", S(INT_MAX)});
  expect_plan_error(Layout::parse("4x4 tile=2x2 table owners=0,0,0," + S(INT_MAX)), ok, Region::whole({4, 4}),
                    {"source layout", S(INT_MAX)});
  expect_plan_error(Layout::parse("4x4 tile=2x2 random ranks=2 first=" + S(INT_MAX - 1)), ok,
                    Region::whole({4, 4}), {"source layout", S(INT_MAX - 1)});
}

TEST(Validation, FunctionOwnerOutsideCommunicator) {
  const int p = world_size();
  const Layout ok = bc({6, 6}, {2, 2}, {1, 1});
  auto with_fn = [](int ranks, OwnerFunction fn) {
    return Layout({6, 6}, {DimPartition::regular(6, 2), DimPartition::regular(6, 2)},
                  Ownership::function("val_fn", ranks, std::move(fn)));
  };
  // Declares ranks=P but gives tile 2x1 to rank P.
  const Layout beyond = with_fn(p, [p](const Coord& t) { return t[0] == 2 && t[1] == 1 ? p : 0; });
  kind("an owner function returning a rank outside [0, ranks)", "LocalIndex in make_plan (the rank's storage map)");
  expect_plan_error(beyond, ok, Region::whole({6, 6}), {"gives tile 2x1 to rank " + S(p), "outside [0, " + S(p) + ")"});
  expect_plan_error(ok, beyond, Region::whole({6, 6}), {"gives tile 2x1 to rank " + S(p), "outside [0, " + S(p) + ")"});
  const Layout negative = with_fn(p, [](const Coord& t) { return t[0] == 1 ? -1 : 0; });
  expect_plan_error(negative, ok, Region::whole({6, 6}), {"to rank -1", "outside [0, " + S(p) + ")"});
  // Declares more ranks than the communicator has.
  kind("an owner function declaring more ranks than the communicator", "Layout::check in make_plan");
  expect_plan_error(with_fn(p + 1, [](const Coord&) { return 0; }), ok, Region::whole({6, 6}),
                    {"needs " + S(p + 1) + " ranks", "communicator has " + S(p)});
}

TEST(Validation, TableWithWrongNumberOfOwners) {
  const Layout ok = bc({4, 4}, {2, 2}, {1, 1});
  kind("a table with the wrong number of owners", "Layout::check in make_plan");
  expect_plan_error(Layout::parse("4x4 tile=2x2 table owners=0,0,0"), ok, Region::whole({4, 4}),
                    {"source layout", "lists 3 owners", "has 4 tiles (2x2)"});
  expect_plan_error(ok, Layout::parse("4x4 tile=2x2 table owners=0,0,0,0,0"), Region::whole({4, 4}),
                    {"target layout", "lists 5 owners", "has 4 tiles (2x2)"});
}

TEST(Validation, TileSizeNotPositive) {
  const Layout ok = bc({10, 4}, {2, 2}, {1, 1});
  kind("tile size 0", "Layout::check in make_plan");
  expect_plan_error(bc({10, 4}, {5, 0}, {1, 1}), ok, Region::whole({10, 4}),
                    {"source layout", "tile size of dimension 1 must be > 0, got 0"});
  kind("a negative tile size", "Layout::check in make_plan");
  expect_plan_error(ok, Layout::parse("10x4 tile=-5x4"), Region::whole({10, 4}),
                    {"target layout", "tile size of dimension 0 must be > 0, got -5"});
  kind("explicit tile boundaries not strictly increasing", "Layout::check in make_plan");
  expect_plan_error(ok, Layout::parse("10x4 tile=[0,5,5,10]x4"), Region::whole({10, 4}),
                    {"target layout", "strictly increasing", "5 then 5"});
}

TEST(Validation, NegativeSizes) {
  const Layout ok = bc({10, 4}, {2, 2}, {1, 1});
  kind("a negative region size", "Region::check in make_plan");
  expect_plan_error(ok, ok, Region{{4, -2}, {0, 0}, {0, 0}}, {"region size 4x-2", "must be >= 0"});
  kind("a negative region offset (from= or to=)", "Region::check in make_plan");
  expect_plan_error(ok, ok, Region{{2, 2}, {-1, 0}, {0, 0}}, {"from=-1x0", "must be >= 0"});
  expect_plan_error(ok, ok, Region{{2, 2}, {0, 0}, {0, -3}}, {"to=0x-3", "must be >= 0"});
  kind("a negative extent", "Layout::check in make_plan");
  expect_plan_error(Layout::parse("-5x4 tile=2x2"), ok, Region{{0, 0}, {0, 0}, {0, 0}},
                    {"source layout", "extent of dimension 0 must be >= 0, got -5"});
  kind("element size < 1", "Layout::check in make_plan");
  expect_plan_error(ok, Layout::parse("10x4 tile=2x2 esize=-8"), Region::whole({10, 4}),
                    {"target layout", "element size must be >= 1 byte, got -8"});
  kind("a negative leading dimension ld=", "Layout::check in make_plan");
  expect_plan_error(ok, Layout::parse("10x4 tile=2x2 storage=local_array ld=-1"), Region::whole({10, 4}),
                    {"target layout", "ld=-1 must be >= 0"});
  kind("ld= on tile storage (was ignored without a word)", "Layout::check in make_plan");
  expect_plan_error(Layout::parse("10x4 tile=2x2 ld=20"), ok, Region::whole({10, 4}),
                    {"source layout", "ld=20 is the leading dimension of storage=local_array",
                     "storage is tile", "drop ld="});
  expect_plan_error(ok, Layout::parse("10x4 tile=2x2 storage=tile_pointers ld=12"), Region::whole({10, 4}),
                    {"target layout", "ld=12", "storage is tile_pointers"});
}

TEST(Validation, LocalArrayNeedsPerDimensionOwnership) {
  const Layout ok = bc({8, 8}, {2, 2}, {1, 1});
  const Layout bad = Layout::parse("8x8 tile=2x2 storage=local_array random seed=1 ranks=1");
  kind("storage=local_array with a random ownership", "Layout::check in make_plan");
  expect_plan_error(bad, ok, Region::whole({8, 8}),
                    {"source layout", "storage=local_array needs a per-dimension ownership (block_cyclic)", "random"});
}

TEST(Validation, LeadingDimensionTooSmall) {
  const int p = world_size();
  // 2P+1 rows in tiles of 2 on a Px1 grid with src=P-1: rank P-1 owns tile 0 and
  // the 1-row tile P (3 rows), every other rank 2 rows. ld=2 is too small on rank
  // P-1 only, so this also checks that one rank's local error reaches everyone.
  BlockCyclicParams bp;
  bp.grid = {p, 1};
  bp.source = {p - 1, 0};
  const Layout bad({2 * p + 1, 3}, {DimPartition::regular(2 * p + 1, 2), DimPartition::regular(3, 3)},
                   Ownership::block_cyclic(bp), Storage{StorageKind::local_array, 2});
  const Layout ok = bc({2 * p + 1, 3}, {2, 2}, {1, 1});
  kind("a leading dimension ld below a rank's local rows", "LocalIndex in make_plan (the rank's storage map)");
  expect_plan_error(ok, bad, Region::whole({2 * p + 1, 3}),
                    {"rank " + S(p - 1) + ":", "target layout", "ld=2", "smaller than", "3 local rows"});
}

TEST(Validation, LayoutsDifferBetweenRanks) {
  const int p = world_size(), last = p - 1;
  if (p == 1) GTEST_SKIP() << "needs two ranks to differ";  // same decision on every rank
  const Layout a = bc({8, 8}, {2, 2}, {1, 1}), a2 = bc({8, 8}, {4, 2}, {1, 1});
  const Region whole = Region::whole({8, 8});
  // Only the last rank has another source tile size.
  kind("the source layout differs between ranks", "make_plan: compared across ranks");
  expect_plan_error(world_rank() == last ? a2 : a, a, whole,
                    {"source layout differs", a.spec(), a2.spec(), "rank " + S(last)});
  // Only the last rank has another target.
  kind("the target layout differs between ranks", "make_plan: compared across ranks");
  expect_plan_error(a, world_rank() == last ? a2 : a, whole, {"target layout differs", a.spec(), a2.spec()});
  // Only the last rank has another region.
  const Region sub{{4, 4}, {1, 1}, {0, 0}};
  kind("the region differs between ranks", "make_plan: compared across ranks");
  expect_plan_error(a, a, world_rank() == last ? sub : whole, {"region differs", whole.str(), sub.str()});
  // Only rank 1 has a layout that is invalid for the communicator: its own
  // error must reach every rank (rather than a "differs" from the others).
  const Layout big = bc({8, 8}, {2, 2}, {p + 1, 1});
  kind("a layout invalid on one rank only", "Layout::check in make_plan (agreed)");
  expect_plan_error(world_rank() == 1 ? big : a, a, whole,
                    {"rank 1:", "source layout", "needs " + S(p + 1) + " ranks"});
  // Options must agree too: a different message limit means different message
  // splits on sender and receiver (would hang or truncate).
  Options o;
  if (world_rank() == last) o.max_message_bytes = 7;
  kind("options that differ between ranks", "make_plan: compared across ranks");
  // Only the settings that differ are named (not every internal one).
  expect_plan_error(a, bc({8, 8}, {2, 2}, {p, 1}), whole,
                    {"options differ between ranks: rank 0 has 'max_message_bytes=1073741824', rank " + S(last) +
                     " has 'max_message_bytes=7'"},
                    o);
}

TEST(Validation, ElementSizeMismatch) {
  const Layout a = bc({6, 6}, {2, 2}, {1, 1}, 0, StorageKind::tile, 0, 8);
  const Layout b = bc({6, 6}, {2, 2}, {1, 1}, 0, StorageKind::tile, 0, 4);
  kind("source and target element sizes differ", "make_plan");
  expect_plan_error(a, b, Region::whole({6, 6}), {"element size mismatch", "esize=8", "esize=4"});
}

TEST(Validation, SizeOverflow) {
  const index_t big = index_t{1} << 40;
  // 2^80 elements: the byte count does not fit 64 bits.
  const Layout huge = bc({big, big}, {big, big}, {1, 1});
  const Layout ok = bc({4, 4}, {2, 2}, {1, 1});
  kind("an array whose byte count overflows 64 bits", "Layout::check in make_plan");
  expect_plan_error(huge, ok, Region{{1, 1}, {0, 0}, {0, 0}},
                    {"source layout", S(big) + "x" + S(big), "overflows 64-bit"});
  // 2^62 one-byte elements fit, 2^62 eight-byte ones do not.
  const index_t e62 = index_t{1} << 62;
  expect_plan_error(ok, bc({e62}, {e62}, {1}), Region{{0}, {0}, {0}}, {"target layout", "overflows 64-bit"});
  // offset + size overflows int64: must be reported as outside, not wrap around.
  const Layout wide = bc({e62}, {index_t{1} << 40}, {1}, 0, StorageKind::tile, 0, 1);
  kind("a region whose offset + size overflows 64 bits", "Region::check in make_plan");
  expect_plan_error(wide, wide, Region{{2}, {INT64_MAX - 1}, {0}}, {"leaves the source array", "dimension 0"});
  expect_plan_error(wide, wide, Region{{2}, {0}, {INT64_MAX}}, {"leaves the target array", "dimension 0"});
}

// The strategies that build MPI datatypes (alltoallw, phased_dt) cannot describe a
// segment that spans more than INT_MAX indices in a dimension built as a vector
// (MPI counts are int): execute fails on every rank, before anything moves, with
// a message that names the strategy. A 1 x (2^31 + 1) row of bytes from rank 0 to
// the last rank; the buffers are allocated, never touched (nothing moves).
TEST(Validation, DatatypeCountAboveIntMax) {
  const int rank = world_rank(), last = world_size() - 1;
  if (world_size() == 1) GTEST_SKIP() << "one rank copies locally: no datatype is built";
  const index_t n = index_t{INT_MAX} + 2;
  const Layout src = bc({1, n}, {1, n}, {1, 1}, 0, StorageKind::tile, 0, 1);
  const Layout dst = bc({1, n}, {1, n}, {1, 1}, last, StorageKind::tile, 0, 1);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  // new without () leaves the bytes uninitialised: virtual memory, not touched.
  std::unique_ptr<std::byte[]> s(rank == 0 ? new std::byte[static_cast<size_t>(n)] : nullptr);
  std::unique_ptr<std::byte[]> d(rank == last ? new std::byte[static_cast<size_t>(n)] : nullptr);
  if (d) d[0] = d[static_cast<size_t>(n - 1)] = std::byte{0x5a};
  kind("a segment longer than an MPI count (INT_MAX) for a datatype strategy", "Plan::execute, before anything moves");
  for (const char* name : {"alltoallw", "phased_dt"}) {
    SCOPED_TRACE(name);
    expect_same_error(capture([&] { plan.execute(s.get(), d.get(), name); }),
                      {std::string(name) + ": a segment spans " + S(n) + " indices in dimension 1",
                       "more than an MPI count holds", "use the p2p strategy"});
    if (d) {
      EXPECT_TRUE(d[0] == std::byte{0x5a} && d[static_cast<size_t>(n - 1)] == std::byte{0x5a}) << name;
    }
  }
}

TEST(Validation, UnknownStrategyName) {
  kind("an unknown strategy name", "check_strategy");
  for (const char* name : {"p2q", "P2P", "alltoall"})
    expect_same_error(capture([&] { check_strategy(name); }),
                      {"unknown strategy '" + std::string(name) + "'",
                       "p2p, segment, p2p_pipelined, alltoallv, alltoallw, direct, shm, phased, phased_sendrecv, phased_unsync, "
                       "phased_dt, taskgraph, centralized, staged, multistage, hybrid, aggregate, auto"});
  for (const std::string& name : strategy_names()) EXPECT_NO_THROW(check_strategy(name));
  EXPECT_NO_THROW(check_strategy("auto"));
}

TEST(Validation, BadRegionStrings) {
  struct Case {
    const char* text;
    std::vector<std::string> words;
  };
  const std::vector<Case> cases = {
      {"10xa", {"bad region", "10xa", "integers joined by 'x'"}},
      {"10x", {"bad region", "10x"}},
      {"", {"bad region", "missing the size", "7000x7000"}},
      {"4x4 form=1x1", {"bad region", "unexpected 'form=1x1'", "SIZE [from=OFFSET] [to=OFFSET]"}},
      {"4x4 from=1x1 from=2x2", {"bad region", "unexpected 'from=2x2'"}},
      {"4x4 from=1y1", {"bad region", "from=", "1y1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string("region '") + c.text + "'");
    kind(std::string("a malformed region string: '") + c.text + "'", "Region::parse");
    expect_same_error(capture([&] { Region::parse(c.text); }), c.words);
  }
  // Parsing checks syntax only: a parsed region that does not fit is make_plan's error.
  const Region r = Region::parse("4x4 from=-1x0");
  const Layout ok = bc({8, 8}, {2, 2}, {1, 1});
  expect_plan_error(ok, ok, r, {"from=-1x0", "must be >= 0"});
}

// Kept apart from BadRegionStrings: Region::parse (src/plan/region.cpp) answers
// both with "expected integers joined by 'x'", which they are; the message must
// say what is wrong (at most 4 dimensions; an integer beyond 64 bits).
TEST(Validation, BadRegionStringsTooManyDimensionsOrTooLarge) {
  kind("a region with more than 4 dimensions", "Region::parse");
  expect_same_error(capture([] { Region::parse("1x1x1x1x1"); }),
                    {"bad region", "1x1x1x1x1", "at most " + S(kMaxDims) + " dimensions"});
  kind("a region integer beyond 64 bits", "Region::parse");
  expect_same_error(capture([] { Region::parse("99999999999999999999"); }),
                    {"bad region", "99999999999999999999", "64 bits"});
}

// Syntax errors: Layout::parse throws before any collective; every rank parses
// the same text, so every rank throws the same message.
TEST(Validation, MalformedSpecs) {
  struct Case {
    const char* input;
    const char* spec;
    std::vector<std::string> words;
  };
  const std::vector<Case> cases = {
      {"an empty spec", "", {"the spec is empty", "expected the shape"}},
      {"a shape with more than 4 dimensions", "2x2x2x2x2", {"5 dimensions", "at most 4"}},
      {"a non-integer value", "8000x8000 block_cyclic grid=ax2", {"column 29", "expected an integer after 'grid='"}},
      {"the wrong number of items for the shape", "8000x8000 tile=400", {"expected 2 items", "got 1"}},
      {"an ownership option before its keyword", "8x8 grid=2x2 block_cyclic", {"must come after its ownership keyword"}},
      {"an option of another ownership", "8x8 random grid=2x2", {"'grid=' is not an option of random", "seed="}},
      {"a repeated option", "8x8 tile=2x2 tile=4x4", {"duplicate 'tile='", "each option may appear once"}},
      {"an unclosed parenthesis", "8x8 band near=(random", {"expected ')' to close the '(' at column 15"}},
      {"a stray ')'", "8x8 tile=2x2)", {"unbalanced ')'"}},
      {"an unknown keyword", "8x8 tiles=2x2", {"unknown keyword 'tiles'", "tile="}},
      {"an unknown storage", "8x8 storage=rows", {"expected tile, local_array or tile_pointers"}},
      {"an unregistered owner function", "8x8 function name=nope", {"unknown owner function 'nope'", "register_owner_function"}},
      {"an integer beyond 64 bits", "1 esize=99999999999999999999", {"does not fit in 64 bits"}},
      {"a rank beyond 32 bits", "8x8 random ranks=4294967296", {"does not fit in a 32-bit int"}},
      {"an offset with explicit boundaries", "100 tile=[0,50,100] offset=3", {"offset applies to regular tiles only"}},
      {"band without far=", "8x8 band near=(random)", {"'band' needs near=(OWNERSHIP) and far=(OWNERSHIP)", "far= is missing"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string("spec '") + c.spec + "'");
    kind(std::string("malformed spec, ") + c.input + ": '" + c.spec + "'", "Layout::parse");
    std::vector<std::string> words = c.words;
    words.push_back("bad layout spec at column");
    expect_same_error(capture([&] { Layout::parse(c.spec); }), words);
  }
}

// Values that parse but are wrong, found by Layout::check (the crashes and the
// silent wrong result of issue 18 among them).
TEST(Validation, BadLayoutValues) {
  const Layout ok = bc({8, 8}, {4, 4}, {1, 1});
  const Region whole = Region::whole({8, 8});
  auto bad = [&](const char* input, const std::string& spec, const std::vector<std::string>& words) {
    SCOPED_TRACE(spec);
    kind(input, "Layout::check in make_plan");
    expect_plan_error(Layout::parse(spec), ok, whole, words);
  };
  bad("a tile size whose end overflows 64 bits (was a silent wrong result)",
      "8x8 tile=9223372036854775807x4 block_cyclic grid=1x2",
      {"source layout", "tile size 9223372036854775807 of dimension 0 is too large", "overflows 64-bit", "here 8"});
  bad("a grid cycle (tile x super x grid) that overflows 64 bits",
      "8x8 tile=4x4 block_cyclic grid=1x1 super=4611686018427387904x1",
      {"block_cyclic dimension 0", "super 4611686018427387904", "overflows 64-bit"});
  bad("a block_cyclic super= entry < 1 (was a division by zero)", "8x8 tile=4x4 block_cyclic grid=1x1 super=0x1",
      {"super=0x1", "every entry must be >= 1"});
  bad("a tile-by-tile ownership over more than 2^25 tiles (planning grew memory until it ran out)",
      "2000000000x2000000000 esize=1 tile=1x1 random seed=1 ranks=2",
      {"random ownership decides each tile's owner apart", "at most 2^25 (33554432) tiles",
       "2000000000x2000000000 tiles"});
  bad("a random ownership of 2^25 + 1 tiles (10^9 grew to 4.3 GB in 20 s)", "33554433x1 esize=1 tile=1x1 random ranks=2",
      {"at most 2^25 (33554432) tiles, this layout has 33554433x1 tiles"});
  bad("a block_cyclic grid of more than 2^30 coordinates", "8x8 tile=4x4 block_cyclic grid=46340x46340",
      {"block_cyclic grid=46340x46340 is too large: at most 2^30 (1073741824) grid coordinates"});
  bad("random ranks=0 (was a division by zero)", "8x8 tile=4x4 random seed=1 ranks=0", {"random ranks=0 must be >= 1"});
  bad("random ranks < 0 (was a message from overflowed values)", "8x8 tile=4x4 random seed=1 ranks=-3",
      {"random ranks=-3 must be >= 1"});
  bad("a first-tile offset outside [0, tile)", "8x8 tile=4x4 offset=4x0", {"offset of dimension 0", "[0, 4)", "got 4"});
  bad("explicit boundaries that miss the extent", "8x8 tile=[0,4,6]x4", {"end at 6", "the extent is 8"});
  bad("explicit boundaries that do not start at 0", "8x8 tile=[2,4,8]x4", {"must start at 0, got 2"});
  bad("a negative band width", "8x8 tile=4x4 band width=-1 near=(random) far=(random)", {"band width=-1 must be >= 0"});
  bad("a band ownership on a 1-D array", "8 tile=4 band near=(random) far=(random)",
      {"band ownership needs at least 2 dimensions"});
  bad("a block_cyclic src= outside the grid", "8x8 tile=4x4 block_cyclic grid=1x1 src=1x0",
      {"src=1x0 must lie inside grid=1x1"});
  bad("storage=local_array with a random ownership (was std::bad_variant_access)",
      "8x8 tile=4x4 random seed=2 ranks=1 storage=local_array", {"storage=local_array needs a per-dimension ownership"});
  bad("an element size whose product with the array overflows 64 bits", "4x4 esize=1152921504606846976",
      {"array 4x4 of 1152921504606846976-byte elements overflows 64-bit byte counts"});
  // A local array whose ld times its columns times esize overflows: LocalIndex.
  kind("a leading dimension whose local array overflows 64-bit bytes", "LocalIndex in make_plan (the rank's storage map)");
  expect_plan_error(Layout::parse("8x8 tile=4x4 storage=local_array ld=1152921504606846976"), ok, whole,
                    {"source layout", "overflows 64 bits"});
  // The example of issue 18: 100 rows on a 2x1 grid (50 or 100 local rows), ld=10.
  kind("ld=10 for 100 rows (was a heap overflow)", "LocalIndex in make_plan (the rank's storage map)");
  expect_plan_error(Layout::parse("100x100 tile=10x10 block_cyclic grid=" + S(std::min(world_size(), 2)) +
                                  "x1 storage=local_array ld=10"),
                    bc({100, 100}, {10, 10}, {1, 1}), Region::whole({100, 100}),
                    {"rank 0:", "source layout", "ld=10 is smaller than the", "local rows of rank 0", "ld must be >= "});
}

// A user function must give every tile the same owner on every rank (issue 18,
// item 7): under one name, ranks compare a hash of the owners, then name a tile.
TEST(Validation, OwnerFunctionDiffersBetweenRanks) {
  const int p = world_size(), rank = world_rank(), last = p - 1;
  if (p == 1) GTEST_SKIP() << "needs two ranks to differ";
  const Layout ok = bc({6, 6}, {2, 2}, {1, 1});
  // The last rank moves every tile one rank on: every tile differs; tile 0x0 is
  // rank 0's on the others and rank 1's on the last.
  const Layout f({6, 6}, {DimPartition::regular(6, 2), DimPartition::regular(6, 2)},
                 Ownership::function("val_rank_dependent", p, [=](const Coord& t) {
                   return static_cast<int>((t[0] + t[1] + (rank == last ? 1 : 0)) % p);
                 }));
  kind("an owner function that answers differently on different ranks", "make_plan: owners compared across ranks");
  expect_plan_error(f, ok, Region::whole({6, 6}),
                    {"source layout", "owners differ between ranks", "tile 0x0 is owned by rank 0 according to rank 0",
                     "by rank 1 according to rank " + S(last), "same owner on every rank"});
  // Differing on one tile only, deep in the array, and in the target.
  const Layout g({6, 6}, {DimPartition::regular(6, 2), DimPartition::regular(6, 2)},
                 Ownership::function("val_one_tile", p, [=](const Coord& t) {
                   return t[0] == 2 && t[1] == 1 && rank == last ? 1 : 0;
                 }));
  expect_plan_error(ok, g, Region::whole({6, 6}),
                    {"target layout", "tile 2x1 is owned by rank 0 according to rank 0",
                     "by rank 1 according to rank " + S(last)});
}

// Whatever an owner function throws, on one rank only, reaches every rank as a
// redist::Error (it used to leave the other ranks blocked in make_plan).
TEST(Validation, OwnerFunctionThrows) {
  const int last = world_size() - 1, rank = world_rank();
  const Layout ok = bc({6, 6}, {2, 2}, {1, 1});
  auto throwing = [&](std::function<void()> raise) {
    return Layout({6, 6}, {DimPartition::regular(6, 2), DimPartition::regular(6, 2)},
                  Ownership::function("val_throws", 1, [=](const Coord& t) {
                    if (t[0] == 1 && rank == last) raise();
                    return 0;
                  }));
  };
  kind("an owner function that throws a std::exception on one rank", "LocalIndex in make_plan (agreed)");
  expect_plan_error(throwing([] { throw std::runtime_error("no owner for you"); }), ok, Region::whole({6, 6}),
                    {"rank " + S(last) + ":", "source layout", "owner function 'val_throws' threw for tile 1x0",
                     "no owner for you"});
  kind("an owner function that throws something else (an int) on one rank", "LocalIndex in make_plan (agreed)");
  expect_plan_error(ok, throwing([] { throw 42; }), Region::whole({6, 6}),
                    {"rank " + S(last) + ":", "target layout", "threw for tile 1x0", "not a std::exception"});
  kind("an owner function that throws redist::Error on one rank", "LocalIndex in make_plan (agreed)");
  expect_plan_error(throwing([] { throw Error("tile 1 is cursed"); }), ok, Region::whole({6, 6}),
                    {"rank " + S(last) + ":", "tile 1 is cursed"});
}

// Layouts that differ between ranks in any one field are caught by comparing
// the canonical spec strings (each field prints).
TEST(Validation, LayoutsDifferInAnyField) {
  const int p = world_size(), last = p - 1;
  if (p == 1) GTEST_SKIP() << "needs two ranks to differ";
  register_owner_function("val_f1", [](const Coord&) { return 0; });
  register_owner_function("val_f2", [](const Coord&) { return 0; });
  const std::string base = "12x8 tile=4x4 block_cyclic grid=1x1";
  const std::vector<std::string> variants = {
      "12x9 tile=4x4 block_cyclic grid=1x1",  // shape
      "12x8 tile=3x4 block_cyclic grid=1x1",  // tile
      "12x8 tile=[0,4,12]x4 block_cyclic grid=1x1",  // boundaries
      "12x8 tile=4x4 offset=1x0 block_cyclic grid=1x1",
      "12x8 tile=4x4 esize=4 block_cyclic grid=1x1",
      "12x8 tile=4x4 storage=tile_pointers block_cyclic grid=1x1",
      "12x8 tile=4x4 storage=local_array block_cyclic grid=1x1",
      "12x8 tile=4x4 block_cyclic grid=1x" + S(p),
      "12x8 tile=4x4 block_cyclic grid=1x1 order=col",
      "12x8 tile=4x4 block_cyclic grid=1x" + S(p) + " src=0x1",
      "12x8 tile=4x4 block_cyclic grid=1x1 super=2x1",
      "12x8 tile=4x4 block_cyclic grid=1x1 first=1",
      "12x8 tile=4x4 block_cyclic grid=1x1 map=1",
      "12x8 tile=4x4 random seed=1 ranks=1",
      "12x8 tile=4x4 table owners=0,0,0,0,0,1",
      "12x8 tile=4x4 band width=1 near=(random) far=(random)",
      "12x8 tile=4x4 function name=val_f1",
  };
  kind("layouts that differ between ranks in any one field (shape, tiles, offset, esize, storage, ownership "
       "and each of its options; not ld=, each rank's own)",
       "make_plan: compared across ranks");
  const Layout b = Layout::parse(base);
  for (const std::string& v : variants) {
    SCOPED_TRACE(v);
    const Layout l = world_rank() == last ? Layout::parse(v) : b;
    expect_plan_error(l, l, Region::whole(b.shape()),
                      {"rank " + S(last) + ":", "source layout differs between ranks", b.spec(), l.spec()});
  }
  // Two functions under different names.
  const Layout f1 = Layout::parse("12x8 tile=4x4 function name=val_f1"), f2 = Layout::parse("12x8 tile=4x4 function name=val_f2");
  expect_plan_error(f1, world_rank() == last ? f2 : f1, Region::whole(b.shape()),
                    {"target layout differs", "name=val_f1", "name=val_f2"});
}

TEST(Validation, BadOptionsAndCommunicator) {
  const Layout ok = bc({8, 8}, {4, 4}, {1, 1});
  const Region whole = Region::whole({8, 8});
  Options o;
  o.max_message_bytes = 0;
  kind("options.max_message_bytes < 1", "make_plan");
  expect_plan_error(ok, ok, whole, {"max_message_bytes must be >= 1, got 0"}, o);
  o = {};
  o.strategy = "fastest";
  kind("an unknown options.strategy", "make_plan");
  expect_plan_error(ok, ok, whole, {"options.strategy", "unknown strategy 'fastest'", "p2p"}, o);
  o = {};
  o.copy_threads = -1;
  kind("options.copy_threads < 0", "make_plan");
  expect_plan_error(ok, ok, whole, {"options.copy_threads must be from 0 to 1024", "got -1"}, o);
  // Not agreed (each rank may pass its own), but a bad value on one rank is an
  // error on every rank.
  o = {};
  if (world_rank() == world_size() - 1) setenv("REDIST_COPY_THREADS", "two", 1);
  kind("$REDIST_COPY_THREADS not a number (on one rank)", "make_plan");
  expect_plan_error(ok, ok, whole, {"REDIST_COPY_THREADS=two", "expected a number of copy threads per rank from 1 to 1024"}, o);
  unsetenv("REDIST_COPY_THREADS");
  kind("MPI_COMM_NULL as the communicator", "make_plan");
  expect_same_error(capture([&] { make_plan(ok, ok, whole, MPI_COMM_NULL); }), {"needs a communicator", "MPI_COMM_NULL"});
  kind("an owner function name that cannot be written in a spec", "register_owner_function");
  expect_same_error(capture([] { register_owner_function("my fn", [](const Coord&) { return 0; }); }),
                    {"owner function name 'my fn'", "without spaces"});
}

// Options::executions (CDT's COUNT): a negative count is refused; with a count,
// every count-th execute drops what the strategies built (the plan holds no
// buffers after it), and a later execute builds it again and moves the data
// right; without one the buffers stay. p2p (scratch), centralized (relay slots),
// alltoallw (datatypes, no buffers), phased.
TEST(Validation, ExecutionsHint) {
  const int rank = world_rank();
  const Layout src = cols_layout(), dst = rows_layout();
  const Region whole = Region::whole(src.shape());
  Options o;
  o.executions = -2;
  kind("options.executions < 0", "make_plan");
  expect_plan_error(src, dst, whole, {"options.executions must be >= 0", "got -2"}, o);
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  for (const char* name : {"p2p", "centralized", "alltoallw", "phased"})
    for (index_t count : {0, 1, 2}) {
      o = {};
      o.executions = count;
      Plan plan = make_plan(src, dst, whole, MPI_COMM_WORLD, o);
      for (int run = 1; run <= 3; ++run) {
        fill_pattern(dst, rank, d.blocks(), kDstId);
        plan.execute(s.const_blocks(), d.blocks(), name);
        const CheckResult k = check_redistributed(dst, rank, d.blocks(), whole, src, kSrcId, kDstId);
        EXPECT_TRUE(all_ok(k.ok())) << name << " executions=" << count << " run " << run << ": " << k.first_error;
        const bool dropped = count > 0 && run % count == 0;
        if (dropped) {
          EXPECT_EQ(plan.held_bytes(), 0) << name << " executions=" << count << " run " << run;
        }
        // Held buffers: the same as after a first run, while kept.
        long long held = plan.held_bytes(), any = held;
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (!dropped && world_size() > 1 && std::string(name) != "alltoallw") {
          EXPECT_GT(any, 0) << name << " executions=" << count << " run " << run << ": buffers kept";
        }
        EXPECT_LE(held, plan.buffer_bytes()) << name;
      }
    }
}

// A memory budget (Options::max_buffer_bytes) that the named strategy cannot keep:
// make_plan fails on every rank naming the smallest budget that works; a plan
// made within it refuses, at execute, a strategy that needs more; the strategies
// that fit (`phased` and `phased_sendrecv` in pieces of half the budget, below
// one message each way) move the data right and allocate no more than the budget
// (measured by the plan's allocation counter, on every rank).
TEST(Validation, MemoryBudget) {
  const int rank = world_rank();
  const Layout src = cols_layout(), dst = rows_layout();
  const Region whole = Region::whole(src.shape());
  Options o;
  o.max_buffer_bytes = -1;
  kind("options.max_buffer_bytes < 0", "make_plan");
  expect_plan_error(src, dst, whole, {"max_buffer_bytes must be >= 0", "got -1"}, o);
  if (world_size() == 1) GTEST_SKIP() << "one rank sends nothing: every budget fits";
  index_t need[2];  // p2p, phased without a budget: max over ranks
  {
    const Plan probe = make_plan(src, dst, whole, MPI_COMM_WORLD);
    need[0] = extra_memory(probe.rank_plan(), "p2p");
    need[1] = extra_memory(probe.rank_plan(), "phased");
    MPI_Allreduce(MPI_IN_PLACE, need, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  }
  ASSERT_GT(need[1], 32);
  ASSERT_LE(need[1], need[0]);  // one message each way against the whole volume (equal on 2 ranks)
  o = {};
  o.max_buffer_bytes = 15;  // below two elements: not even phased's one element each way
  o.strategy = "phased";
  kind("a memory budget too small for options.strategy", "make_plan");
  expect_plan_error(src, dst, whole,
                    {"options.max_buffer_bytes = 15 is too small for strategy phased", "needs 16 bytes",
                     "strategy alltoallw needs no buffer at all (any budget)", "within this budget: alltoallw"},
                    o);
  // Under arithmetic only the strategies that apply it count: auto took alltoallw's
  // 0 bytes as "some strategy fits", then ran p2p beyond the budget; the message
  // named alltoallw, which cannot apply it.
  o.arithmetic.type = ElementType::f64;
  o.arithmetic.alpha = 2.0;
  o.strategy = "auto";
  kind("a memory budget that no strategy applying options.arithmetic fits (auto)", "make_plan");
  expect_plan_error(src, dst, whole,
                    {"options.max_buffer_bytes = 15 is too small for every strategy that applies options.arithmetic "
                     "(auto)", "smallest budget that works is 16 (strategy phased)"},
                    o);
  o.strategy = "p2p";
  expect_plan_error(src, dst, whole, {"too small for strategy p2p", "smallest budget that works is 16 (strategy phased)"},
                    o);
  o.arithmetic = {};
  const index_t budget = std::max<index_t>(16, need[1] / 3);  // below one message each way: pieces
  o.max_buffer_bytes = budget;
  o.strategy = "phased";
  Plan plan = make_plan(src, dst, whole, MPI_COMM_WORLD, o);
  EXPECT_LE(extra_memory(plan.rank_plan(), "phased", budget), budget);
  EXPECT_EQ(extra_memory(plan.rank_plan(), "p2p", budget), extra_memory(plan.rank_plan(), "p2p"));
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  {
    kind("a strategy over the plan's memory budget at execute", "Plan::execute, before anything moves");
    fill_pattern(dst, rank, d.blocks(), kDstId);
    expect_same_error(capture([&] { plan.execute(s.const_blocks()[0], d.blocks()[0], "p2p"); }),
                      {"strategy p2p needs " + S(need[0]), "options.max_buffer_bytes = " + S(budget)});
    expect_untouched(dst, d, kDstId, "target");
    EXPECT_EQ(plan.buffer_bytes(), 0);  // the refused strategy allocated nothing
  }
  for (const char* ok : {"phased", "phased_sendrecv", "phased_dt", "alltoallw"}) {
    fill_pattern(dst, rank, d.blocks(), kDstId);
    plan.execute(s.const_blocks()[0], d.blocks()[0], ok);
    const CheckResult k = check_redistributed(dst, rank, d.blocks(), whole, src, kSrcId, kDstId);
    EXPECT_TRUE(all_ok(k.ok())) << ok << ": " << k.first_error;
    EXPECT_TRUE(all_ok(plan.buffer_bytes() <= budget && plan.buffer_bytes() > 0))
        << ok << ": rank " << rank << " allocated " << plan.buffer_bytes() << " bytes, budget " << budget;
  }
}

// p2p, segment, p2p_pipelined and the phased variants send and receive messages (segments)
// that are one run of storage in place, so they take no room in the packed (or
// round) buffers: rank 0's whole
// local array moved to the last rank needs none, fits a budget of 0 bytes' worth
// (1), and still arrives right; under Options::arithmetic the receiver unpacks it
// from a buffer of the whole message. Plan::buffer_bytes after a run equals
// extra_memory on every rank, also into tile storage (what is one run there
// depends on the planner's segments: not asserted).
TEST(Validation, OneRunMessagesTakeNoBuffer) {
  const int rank = world_rank(), p = world_size();
  if (p == 1) GTEST_SKIP() << "one rank sends nothing";
  const std::string last = std::to_string(p - 1);
  const Layout src = Layout::parse("97x61 tile=10x10 block_cyclic grid=1x1 storage=local_array");
  const Layout dst = Layout::parse("97x61 tile=7x9 block_cyclic grid=1x1 first=" + last + " storage=local_array");
  const Layout tiled = Layout::parse("97x61 tile=7x9 block_cyclic grid=1x1 first=" + last + " storage=tile");
  const Region whole = Region::whole(src.shape());
  const index_t bytes = 97 * 61 * 8;
  struct Case {
    const Layout* dst;
    bool arithmetic;
    index_t want;  // buffer bytes on the last rank (-1: not asserted)
  };
  for (const Case& c : {Case{&dst, false, 0}, Case{&dst, true, bytes}, Case{&tiled, false, -1}})
    for (const char* name : {"p2p", "segment", "p2p_pipelined", "phased", "phased_sendrecv", "phased_unsync"}) {
      SCOPED_TRACE(detail::cat(name, " into ", c.dst->spec(), c.arithmetic ? " with arithmetic" : ""));
      Options o;
      o.strategy = name;
      if (c.arithmetic) o.arithmetic.type = ElementType::f64, o.arithmetic.beta = 1.0;  // target += source
      if (c.want == 0) o.max_buffer_bytes = 1;
      Plan plan = make_plan(src, *c.dst, whole, MPI_COMM_WORLD, o);
      harness::LocalStorage s(src, rank), d(*c.dst, rank);
      fill_pattern(src, rank, s.blocks(), kSrcId);
      fill_pattern(*c.dst, rank, d.blocks(), kDstId);
      plan.execute(s.const_blocks()[0], d.blocks()[0]);
      if (!c.arithmetic) {
        const CheckResult k = check_redistributed(*c.dst, rank, d.blocks(), whole, src, kSrcId, kDstId);
        EXPECT_TRUE(all_ok(k.ok())) << k.first_error;
      }
      if (c.want >= 0) {
        const index_t want = rank == p - 1 ? c.want : 0;
        EXPECT_TRUE(all_ok(plan.buffer_bytes() == want)) << "rank " << rank << ": " << plan.buffer_bytes() << " bytes";
      }
      EXPECT_EQ(plan.buffer_bytes(), extra_memory(plan.rank_plan(), name, o)) << "rank " << rank;
    }
}

// One plan, every strategy that fits a budget run in turn, forward then
// backward: the buffers the plan holds at once (Plan::buffer_bytes, its peak)
// stay within the budget on every rank. Strategies keep their buffers between
// executes, so one that left a partial buffer while another made its own held
// both (p2p_pipelined's slots beside phased's rounds: 22.59 KB under 12,000 B
// on 3 ranks until round_send dropped them). r -> 3r on a 1x6000 row: p2p
// needs more than the budget on 2-4 ranks, and 5 strategies fit there (all on
// one rank, where nothing is sent). Then the forwarding strategies (centralized,
// staged, multistage, hybrid, aggregate), which keep slots of their own: each
// fits 7,000 B alone on 2 ranks, and the plan held all of theirs at once (32,000
// B) until a strategy that does not fit beside what the others keep drops it.
// Which strategies fit: Plan::extra_bytes, the figure the budget counts.
TEST(Validation, BudgetHoldsAcrossStrategiesOfOnePlan) {
  const int rank = world_rank(), p = world_size();
  const std::string grid = "1x" + std::to_string(p);
  struct Case {
    std::string src, dst;
    index_t budget;
    size_t at_least;  // strategies that fit
  };
  std::vector<Case> cases = {{"1x6000 tile=1x4 block_cyclic grid=" + grid, "1x6000 tile=1x12 block_cyclic grid=" + grid,
                              12000, 4}};
  if (p >= 2)
    cases.push_back({"40x40 tile=20x40 block_cyclic grid=2x1", "40x40 tile=40x20 block_cyclic grid=1x2", 7000, 8});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src + " -> " + c.dst);
    const Layout src = Layout::parse(c.src), dst = Layout::parse(c.dst);
    const Region whole = Region::whole(src.shape());
    Options o;
    o.max_buffer_bytes = c.budget;
    o.strategy = "auto";  // the default, p2p, does not fit on 3 and 4 ranks
    Plan plan = make_plan(src, dst, whole, MPI_COMM_WORLD, o);
    std::vector<std::string> fit;
    int forwarding = 0;
    for (const std::string& n : strategy_names())
      if (plan.extra_bytes(n) <= o.max_buffer_bytes) {
        fit.push_back(n);
        forwarding += n == "centralized" || n == "staged" || n == "multistage" || n == "hybrid" || n == "aggregate";
      }
    ASSERT_GE(fit.size(), c.at_least);
    if (c.budget == 7000) {
      ASSERT_GE(forwarding, 3) << "the case no longer runs the forwarding strategies";
    }
    std::vector<std::string> order = fit;
    order.insert(order.end(), fit.rbegin(), fit.rend());
    harness::LocalStorage s(src, rank), d(dst, rank);
    fill_pattern(src, rank, s.blocks(), kSrcId);
    for (const std::string& n : order) {
      SCOPED_TRACE("strategy " + n);
      fill_pattern(dst, rank, d.blocks(), kDstId);
      plan.execute(s.const_blocks()[0], d.blocks()[0], n);
      const CheckResult k = check_redistributed(dst, rank, d.blocks(), whole, src, kSrcId, kDstId);
      EXPECT_TRUE(all_ok(k.ok())) << k.first_error;
      EXPECT_TRUE(all_ok(plan.buffer_bytes() <= o.max_buffer_bytes))
          << "rank " << rank << " has held " << plan.buffer_bytes() << " bytes, over the budget " << o.max_buffer_bytes;
    }
    EXPECT_EQ(make_plan(src, dst, whole, MPI_COMM_WORLD, {}).extra_bytes(fit[0]), -1);  // no budget
    EXPECT_THROW(plan.extra_bytes("auto"), Error);
    if (rank == 0) std::printf("[ info     ] %zu strategies within the budget, %s first\n", fit.size(), fit[0].c_str());
  }
}

// ------------------------------------------------------------------ execute errors

// Runs `bad` (an execute that must fail) for every strategy and checks the error
// and that the target still holds its pattern on every rank.
void expect_execute_error(harness::LocalStorage& d, const Layout& dst,
                          const std::function<void(const std::string&)>& bad,
                          const std::vector<std::string>& words) {
  for (const std::string& e : strategy_names()) {
    SCOPED_TRACE("strategy " + e);
    fill_pattern(dst, world_rank(), d.blocks(), kDstId);
    expect_same_error(capture([&] { bad(e); }), words);
    expect_untouched(dst, d, kDstId, "target");
  }
}

// execute on one rank with another strategy than the others: different message
// schemes would never match (hang); it must fail before anything moves.
TEST(Validation, StrategyDiffersBetweenRanks) {
  const int rank = world_rank(), last = world_size() - 1;
  if (world_size() == 1) GTEST_SKIP() << "needs two ranks to differ";
  const Layout src = cols_layout(), dst = rows_layout();
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  kind("strategies that differ between ranks at execute", "Plan::execute, before anything moves");
  expect_execute_error(
      d, dst,
      [&](const std::string& e) {
        const std::string other = e == "p2p" ? "segment" : "p2p";
        plan.execute(s.const_blocks()[0], d.blocks()[0], rank == last ? other : e);
      },
      {"different strategies", "every rank must use the same"});
  // A name no strategy has, on one rank only: that rank's error, on every rank.
  kind("an unknown strategy on one rank at execute", "Plan::execute, before anything moves");
  expect_execute_error(
      d, dst, [&](const std::string& e) { plan.execute(s.const_blocks()[0], d.blocks()[0], rank == last ? "fast" : e); },
      {"rank " + S(last) + ":", "unknown strategy 'fast'",
       "allowed: p2p, segment, p2p_pipelined, alltoallv, alltoallw, direct, shm, phased, phased_sendrecv, phased_unsync, phased_dt, "
       "taskgraph, centralized, staged, multistage, hybrid, aggregate, auto"});
}

// $REDIST_NODE_SIZE on one rank alone (read where Options::node_size is 0 by the
// node-aware strategies and shared_allocate): another size, or not a size. The
// same error on every rank, before anything moves: a malformed value used to
// throw on its rank alone while the others waited in MPI_Comm_split (a hang), and
// a different size cut that rank's node elsewhere.
TEST(Validation, NodeSizeDiffersBetweenRanks) {
  const int rank = world_rank(), last = world_size() - 1;
  if (world_size() == 1) GTEST_SKIP() << "needs two ranks to differ";
  const Layout src = cols_layout(), dst = rows_layout();
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  struct Case {
    const char* value;
    const char* input;
    std::vector<std::string> words;
  };
  const Case cases[] = {
      {"1", "$REDIST_NODE_SIZE=1 on one rank alone (the others: the whole node)",
       {"ranks asked for different node sizes (0 and 1 ranks per node", "every rank must ask for the same"}},
      {"two", "$REDIST_NODE_SIZE=two on one rank alone",
       {"REDIST_NODE_SIZE=two: expected a number of ranks per node"}}};
  for (const Case& c : cases) {
    if (rank == last) setenv("REDIST_NODE_SIZE", c.value, 1);
    kind(c.input, "the node-aware strategies (shm, aggregate) before anything moves; shared_allocate");
    for (const char* strategy : {"shm", "aggregate"}) {
      SCOPED_TRACE(strategy);
      Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
      fill_pattern(dst, rank, d.blocks(), kDstId);
      expect_same_error(capture([&] { plan.execute(s.const_blocks()[0], d.blocks()[0], strategy); }), c.words);
      expect_untouched(dst, d, kDstId, "target");
    }
    expect_same_error(capture([&] { shared_free(shared_allocate(MPI_COMM_WORLD, 64)); }), c.words);
    unsetenv("REDIST_NODE_SIZE");
  }
}

// p2p_pipelined's piece size from the environment, not a size on one rank: the
// same error on every rank before anything moves (it was read as 1 byte: pieces
// of one element, 25x slower and silent).
TEST(Validation, PipelinedSlotBytesNotASize) {
  const int rank = world_rank(), last = world_size() - 1;
  const Layout src = cols_layout(), dst = rows_layout();
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  if (rank == last) setenv("REDIST_P2P_PIPELINED_SLOT_BYTES", "abc", 1);
  kind("$REDIST_P2P_PIPELINED_SLOT_BYTES=abc on one rank", "p2p_pipelined, before anything moves");
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  fill_pattern(dst, rank, d.blocks(), kDstId);
  expect_same_error(capture([&] { plan.execute(s.const_blocks()[0], d.blocks()[0], "p2p_pipelined"); }),
                    {"rank " + S(last) + ": REDIST_P2P_PIPELINED_SLOT_BYTES=abc: expected p2p_pipelined's piece size"});
  expect_untouched(dst, d, kDstId, "target");
  unsetenv("REDIST_P2P_PIPELINED_SLOT_BYTES");
  plan.execute(s.const_blocks()[0], d.blocks()[0], "p2p_pipelined");  // runs again once the value is gone
  const CheckResult k = check_redistributed(dst, rank, d.blocks(), Region::whole(src.shape()), src, kSrcId, kDstId);
  EXPECT_TRUE(all_ok(k.ok())) << k.first_error;
}

TEST(Validation, MissingBuffer) {
  const int rank = world_rank(), last = world_size() - 1;
  const Layout src = cols_layout(), dst = rows_layout();
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  const index_t n_src = LocalIndex(src, last).elements(), n_dst = LocalIndex(dst, last).elements();
  // Only the last rank forgets its target buffer.
  kind("a null target buffer on one rank", "Plan::execute, before anything moves");
  expect_execute_error(
      d, dst, [&](const std::string& e) { plan.execute(s.const_blocks()[0], rank == last ? nullptr : d.blocks()[0], e); },
      {"rank " + S(last) + ":", "target buffer 0 is null", "stores " + S(n_dst) + " elements"});
  // Only the last rank forgets its source buffer.
  kind("a null source buffer on one rank", "Plan::execute, before anything moves");
  expect_execute_error(
      d, dst, [&](const std::string& e) { plan.execute(rank == last ? nullptr : s.const_blocks()[0], d.blocks()[0], e); },
      {"rank " + S(last) + ":", "source buffer 0 is null", "stores " + S(n_src) + " elements"});
  // One null tile pointer among several.
  const Layout tp = rows_layout(StorageKind::tile_pointers);
  harness::LocalStorage t(tp, rank);
  Plan plan_tp = make_plan(src, tp, Region::whole(src.shape()), MPI_COMM_WORLD);
  std::vector<void*> ptrs(t.blocks().begin(), t.blocks().end());
  if (rank == last) ptrs[1] = nullptr;
  kind("a null tile pointer among several", "Plan::execute, before anything moves");
  expect_execute_error(
      t, tp,
      [&](const std::string& e) { plan_tp.execute(std::span<const void* const>(s.const_blocks()), std::span<void* const>(ptrs), e); },
      {"rank " + S(last) + ":", "target buffer 1 is null", "stores 4 elements"});
  // Two tile pointers at one address, and two overlapping by one element, on the
  // last rank: one tile's result would overwrite another's (the C API accepted
  // them; helper's trial). Tiles 0 and 1 hold 4 elements each there.
  kind("target tile pointers that overlap each other", "Plan::execute, before anything moves");
  for (const index_t shift : {index_t{0}, index_t{3}}) {
    std::vector<void*> alias(t.blocks().begin(), t.blocks().end());
    if (rank == last) alias[1] = static_cast<std::byte*>(alias[0]) + shift * tp.elem_size();
    for (const std::string& e : strategy_names()) {
      SCOPED_TRACE("strategy " + e + ", shift " + S(shift));
      fill_pattern(tp, rank, t.blocks(), kDstId);
      expect_same_error(
          capture([&] { plan_tp.execute(std::span<const void* const>(s.const_blocks()), std::span<void* const>(alias), e); }),
          {"rank " + S(last) + ":", "two of the target's local tile buffers overlap", "memory of its own"});
      expect_untouched(tp, t, kDstId, "target");
    }
  }
  // Source tiles may share memory (only read): tile 1 read from tile 0's memory.
  const Layout stp = cols_layout(StorageKind::tile_pointers);
  harness::LocalStorage u(stp, rank);
  fill_pattern(stp, rank, u.blocks(), kSrcId);
  Plan plan_stp = make_plan(stp, dst, Region::whole(stp.shape()), MPI_COMM_WORLD);
  std::vector<const void*> shared_src(u.const_blocks().begin(), u.const_blocks().end());
  if (shared_src.size() > 1) shared_src[1] = shared_src[0];
  EXPECT_NO_THROW(plan_stp.execute(std::span<const void* const>(shared_src), std::span<void* const>(d.blocks())));
  EXPECT_TRUE(all_ok(check_pattern(src, rank, s.blocks(), kSrcId).ok())) << "source changed";
}

TEST(Validation, TilePointersWrongCount) {
  const int rank = world_rank(), last = world_size() - 1;
  const Layout src = cols_layout(StorageKind::tile_pointers), dst = rows_layout(StorageKind::tile_pointers);
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  const index_t n_dst = LocalIndex(dst, last).ntiles(), n_src = LocalIndex(src, last).ntiles();
  // The last rank passes one target pointer too many.
  std::vector<void*> more(d.blocks().begin(), d.blocks().end());
  if (rank == last) more.push_back(d.blocks()[0]);
  kind("a wrong number of tile pointers", "Plan::execute, before anything moves");
  expect_execute_error(
      d, dst,
      [&](const std::string& e) { plan.execute(std::span<const void* const>(s.const_blocks()), std::span<void* const>(more), e); },
      {"rank " + S(last) + ":", "target storage=tile_pointers", "one pointer per local tile (" + S(n_dst) + ")",
       "got " + S(n_dst + 1)});
  // The last rank passes one source pointer too few.
  std::vector<const void*> fewer(s.const_blocks().begin(), s.const_blocks().end());
  if (rank == last) fewer.pop_back();
  expect_execute_error(
      d, dst,
      [&](const std::string& e) { plan.execute(std::span<const void* const>(fewer), std::span<void* const>(d.blocks()), e); },
      {"source storage=tile_pointers", "(" + S(n_src) + ")", "got " + S(n_src - 1)});
  // One-buffer storage given several pointers.
  const Layout one = rows_layout();
  harness::LocalStorage o(one, rank);
  Plan plan1 = make_plan(src, one, Region::whole(src.shape()), MPI_COMM_WORLD);
  std::vector<void*> two = {o.blocks()[0], o.blocks()[0]};
  kind("several pointers for one-buffer storage", "Plan::execute, before anything moves");
  expect_execute_error(
      o, one,
      [&](const std::string& e) { plan1.execute(std::span<const void* const>(s.const_blocks()), std::span<void* const>(two), e); },
      {"target", "expected one buffer, got 2 pointers"});
}

TEST(Validation, OverlappingBuffers) {
  const int rank = world_rank(), last = world_size() - 1;
  const Layout src = cols_layout(), dst = rows_layout();
  const index_t es = src.elem_size();
  const size_t sb = static_cast<size_t>(LocalIndex(src, rank).elements() * es);
  const size_t db = static_cast<size_t>(LocalIndex(dst, rank).elements() * es);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  // On the last rank, one allocation holds both sides sharing one element; the
  // other ranks have separate buffers. Both orders (target after / before source).
  kind("source and target buffers that overlap on one rank", "Plan::execute, before anything moves");
  for (bool target_after : {true, false}) {
    SCOPED_TRACE(target_after ? "target starts in the source's last element" : "source starts in the target's last element");
    std::vector<std::byte> shared(sb + db - static_cast<size_t>(es)), s_own(sb), d_own(db);
    const void* sp = s_own.data();
    void* dp = d_own.data();
    if (rank == last) {
      sp = target_after ? shared.data() : shared.data() + db - es;
      dp = target_after ? shared.data() + sb - es : shared.data();
    }
    std::vector<void*> dv{dp};
    std::vector<void*> sv{const_cast<void*>(sp)};
    for (const std::string& e : strategy_names()) {
      SCOPED_TRACE("strategy " + e);
      fill_pattern(src, rank, sv, kSrcId);
      fill_pattern(dst, rank, dv, kDstId);  // after the source: the shared element holds the target's byte
      expect_same_error(capture([&] { plan.execute(sp, dp, e); }),
                        {"rank " + S(last) + ":", "source and target buffers overlap", "separate buffers"});
      const CheckResult c = check_pattern(dst, rank, dv, kDstId);
      EXPECT_TRUE(all_ok(c.ok())) << "target changed on rank " << rank << ": " << c.first_error;
    }
  }
  // The very same buffer on both sides (in place) on every rank.
  std::vector<std::byte> same(std::max(sb, db));
  std::vector<void*> sameptr{same.data()};
  fill_pattern(dst, rank, sameptr, kDstId);
  kind("the same buffer as source and target (in place)", "Plan::execute, before anything moves");
  expect_same_error(capture([&] { plan.execute(same.data(), same.data()); }), {"overlap"});
  EXPECT_TRUE(all_ok(check_pattern(dst, rank, sameptr, kDstId).ok()));
}

TEST(Validation, BadPlanUse) {
  const int rank = world_rank();
  const Layout src = cols_layout(), dst = rows_layout();
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  kind("execute on an empty (default-constructed) Plan", "Plan::execute");
  Plan empty;
  fill_pattern(dst, rank, d.blocks(), kDstId);
  expect_same_error(capture([&] { empty.execute(s.const_blocks()[0], d.blocks()[0]); }), {"empty Plan", "make_plan"});
  expect_untouched(dst, d, kDstId, "target");
  // Every accessor of an empty Plan says so (stats() dereferenced nothing: a
  // segfault), but comm(), MPI_COMM_NULL; empty() tells without an exception.
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.comm(), MPI_COMM_NULL);
  for (auto [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"stats", [&] { (void)empty.stats(); }},
           {"rank_plan", [&] { (void)empty.rank_plan(); }},
           {"source", [&] { (void)empty.source(); }},
           {"target", [&] { (void)empty.target(); }},
           {"region", [&] { (void)empty.region(); }},
           {"options", [&] { (void)empty.options(); }},
           {"machine", [&] { (void)empty.machine(); }},
           {"describe", [&] { (void)empty.describe("shm"); }},
           {"buffer_bytes", [&] { (void)empty.buffer_bytes(); }},
           {"predictions", [&] { (void)empty.predictions(); }}}) {
    try {
      call();
      ADD_FAILURE() << what << " of an empty Plan did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what + " of an empty Plan"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(LocalIndex(src, -1), Error);
  Plan plan = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
  kind("strategy auto on a plan made without a machine model", "Plan::execute, before anything moves");
  expect_same_error(capture([&] { plan.execute(s.const_blocks()[0], d.blocks()[0], "auto"); }),
                    {"strategy auto needs the machine model", "a calibration file (calibration; C, C++, Python)", "model = true (C++"});
  expect_untouched(dst, d, kDstId, "target");
  kind("predictions on a plan made without a machine model", "Plan::predictions");
  expect_same_error(capture([&] { plan.predictions(); }), {"no machine model"});
  const auto ns = static_cast<size_t>(LocalIndex(src, rank).elements()), nd = static_cast<size_t>(LocalIndex(dst, rank).elements());
  auto* sd = static_cast<double*>(s.data());
  auto* dd = static_cast<double*>(d.data());
  kind("typed spans whose element size is not the layouts' esize", "Plan::execute (spans)");
  expect_same_error(capture([&] {
                      plan.execute(std::span<const float>(reinterpret_cast<const float*>(sd), 2 * ns),
                                   std::span<float>(reinterpret_cast<float*>(dd), 2 * nd));
                    }),
                    {"elements of 4 bytes", "esize=8"});
  kind("typed spans smaller than the rank's storage", "Plan::execute (spans)");
  expect_same_error(capture([&] { plan.execute(std::span<const double>(sd, ns), std::span<double>(dd, nd - 1)); }),
                    {"source and", "target elements; the spans hold"});
  expect_untouched(dst, d, kDstId, "target");
}

// The harness's repetitions (what `redist run --reps/--warmup/--no-verify` set):
// checked and compared across ranks before anything is timed.
TEST(Validation, BadRepetitions) {
  const int last = world_size() - 1;
  harness::CaseRun run(cols_layout(), rows_layout(), Region::whole(cols_layout().shape()), MPI_COMM_WORLD);
  run.add_strategy("p2p");
  harness::MeasureOptions mo;
  mo.reps = 0;
  kind("zero timed repetitions", "CaseRun::measure");
  expect_same_error(capture([&] { run.measure(mo); }), {"reps=0 must be >= 1"});
  mo.reps = 1, mo.warmup = -1;
  kind("a negative warm-up count", "CaseRun::measure");
  expect_same_error(capture([&] { run.measure(mo); }), {"warmup=-1 must be >= 0"});
  if (world_size() == 1) return;
  mo = {};
  mo.reps = world_rank() == last ? 3 : 2;
  mo.verify = world_rank() != last;
  kind("repetitions or verification that differ between ranks", "CaseRun::measure: compared across ranks");
  expect_same_error(capture([&] { run.measure(mo); }),
                    {"rank " + S(last) + ":", "measure options differ between ranks: rank 0 has 'reps=2 verify=1', rank " +
                                                   S(last) + " has 'reps=3 verify=0'"});
}

// ------------------------------------------------------------------ valid edge cases

TEST(Validation, ZeroSizeRegionIsNoOp) {
  const int rank = world_rank(), p = world_size();
  const Layout src = cols_layout(), dst = rows_layout(StorageKind::tile_pointers);
  harness::LocalStorage s(src, rank), d(dst, rank);
  const std::vector<Region> regions = {
      {{0, 4}, {0, 0}, {0, 0}},
      {{8, 0}, {0, 1}, {0, 2}},
      {{0, 0}, {8, 4 * p}, {8, 4 * p}},  // empty, at the far corner
      {{0, 3}, {3, 2}, {5, 1}},
  };
  for (const Region& r : regions)
    for (const std::string& e : strategy_names()) {
      SCOPED_TRACE("region " + r.str() + " strategy " + e);
      fill_pattern(src, rank, s.blocks(), kSrcId);
      fill_pattern(dst, rank, d.blocks(), kDstId);
      Outcome o = capture([&] {
        Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD);
        EXPECT_EQ(plan.stats().bytes_sent + plan.stats().bytes_received + plan.stats().bytes_local, 0);
        plan.execute(std::span<const void* const>(s.const_blocks()), std::span<void* const>(d.blocks()), e);
      });
      EXPECT_TRUE(all_ok(!o.threw && o.message.empty())) << o.message;
      expect_untouched(dst, d, kDstId, "target");
      expect_untouched(src, s, kSrcId, "source");
    }
  // Zero-extent arrays: every rank stores nothing and passes null pointers.
  const Layout z1 = block_cyclic_layout({0, 6}, {2, 2}, {p, 1}), z2 = block_cyclic_layout({5, 0}, {2, 2}, {1, p});
  for (const std::string& e : strategy_names()) {
    Outcome o = capture([&] {
      Plan plan = make_plan(z1, z2, Region{{0, 0}, {0, 0}, {0, 0}}, MPI_COMM_WORLD);
      plan.execute(nullptr, nullptr, e);
    });
    EXPECT_TRUE(all_ok(!o.threw && o.message.empty())) << e << ": " << o.message;
  }
}

// A rank that stores nothing may pass null; everything still moves.
TEST(Validation, NullBufferAllowedWhereRankStoresNothing) {
  const int rank = world_rank();
  const Layout src = cols_layout(), dst = bc({8, 4 * world_size()}, {2, 2}, {1, 1});  // all on rank 0
  harness::LocalStorage s(src, rank), d(dst, rank);
  ASSERT_EQ(d.blocks()[0] == nullptr, rank != 0);
  const Region r = Region::whole(src.shape());
  Plan plan = make_plan(src, dst, r, MPI_COMM_WORLD);
  for (const std::string& e : strategy_names()) {
    fill_pattern(src, rank, s.blocks(), kSrcId);
    fill_pattern(dst, rank, d.blocks(), kDstId);
    Outcome o = capture([&] { plan.execute(s.const_blocks()[0], d.blocks()[0], e); });
    EXPECT_TRUE(all_ok(!o.threw && o.message.empty())) << e << ": " << o.message;
    CheckResult c = check_redistributed(dst, rank, d.blocks(), r, src, kSrcId, kDstId);
    EXPECT_TRUE(all_ok(c.ok())) << e << ": " << c.first_error;
  }
}

// After many failed make_plans and executes on MPI_COMM_WORLD, no message or
// collective is left over: a valid plan on the same communicator still works,
// and so does the plan whose execute failed.
TEST(Validation, ValidPlanAfterFailures) {
  const int rank = world_rank(), p = world_size(), last = p - 1;
  const Layout src = cols_layout(), dst = rows_layout();
  const Region sub{{5, 4 * p - 1}, {2, 1}, {1, 0}};
  harness::LocalStorage s(src, rank), d(dst, rank);
  fill_pattern(src, rank, s.blocks(), kSrcId);
  // Failures at every stage: local checks, agreement on layouts, planning, execute.
  capture([&] { make_plan(bc({8, 8}, {2, 2}, {p + 1, 1}), src, Region::whole({8, 8}), MPI_COMM_WORLD); });
  capture([&] { make_plan(rank == last ? dst : src, dst, sub, MPI_COMM_WORLD); });
  capture([&] {
    make_plan(Layout({6, 6}, {DimPartition::regular(6, 2), DimPartition::regular(6, 2)},
                     Ownership::function("val_bad", p, [p](const Coord&) { return p; })),
              bc({6, 6}, {2, 2}, {1, 1}), Region::whole({6, 6}), MPI_COMM_WORLD);
  });
  Plan plan = make_plan(src, dst, sub, MPI_COMM_WORLD);
  for (const std::string& e : strategy_names()) {
    fill_pattern(dst, rank, d.blocks(), kDstId);
    Outcome o = capture([&] { plan.execute(s.const_blocks()[0], rank == last ? nullptr : d.blocks()[0], e); });
    EXPECT_TRUE(all_ok(o.threw));
    expect_untouched(dst, d, kDstId, "target after failed execute");
  }
  for (const std::string& e : strategy_names()) {
    SCOPED_TRACE("strategy " + e);
    // The plan that failed to execute, now with good buffers.
    fill_pattern(dst, rank, d.blocks(), kDstId);
    plan.execute(s.const_blocks()[0], d.blocks()[0], e);
    CheckResult c = check_redistributed(dst, rank, d.blocks(), sub, src, kSrcId, kDstId);
    EXPECT_TRUE(all_ok(c.ok())) << c.first_error;
    // A fresh plan on the same communicator.
    fill_pattern(dst, rank, d.blocks(), kDstId);
    Plan fresh = make_plan(src, dst, Region::whole(src.shape()), MPI_COMM_WORLD);
    fresh.execute(s.const_blocks()[0], d.blocks()[0], e);
    c = check_redistributed(dst, rank, d.blocks(), Region::whole(src.shape()), src, kSrcId, kDstId);
    EXPECT_TRUE(all_ok(c.ok())) << c.first_error;
  }
  EXPECT_TRUE(all_ok(check_pattern(src, rank, s.blocks(), kSrcId).ok())) << "source changed";
}

}  // namespace
