// LayoutCollection: the runtime's data collection over the core's layouts. Owners
// and local bytes agree with Layout/LocalIndex for every ownership kind; bad
// layouts and remote tiles give clear errors; a task graph over random, table and
// band ownerships with uneven tiles gives bit-for-bit the serial result, gathered
// by the core's redistribution.
#include <cstring>
#include <chrono>
#include <numeric>
#include <thread>

#include "redist/shm.hpp"

#include "test_util.hpp"

using rt::Targets;
using rt::Tile;

class Collection : public ::testing::TestWithParam<Config> {};

namespace {
std::vector<redist::Layout> layouts(int ranks) {
  const std::string r = std::to_string(ranks);
  const std::string owners = owner_list(4 * 3, [=](int t) { return (t * 5 + 1) % ranks; });
  return {
      redist::block_cyclic_layout({23, 17}, {5, 4}, {1, ranks}),
      redist::Layout::parse("23x17 tile=5x4 block_cyclic grid=" + r + "x1 order=col src=" +
                            std::to_string(ranks - 1) + "x0 super=2x1"),
      redist::Layout::parse("31x29 tile=6x7 offset=2x0 random seed=11 ranks=" + r),
      redist::Layout::parse("30x19 tile=[0,1,13,14,30]x[0,6,7,19] table owners=" + owners),
      redist::Layout::parse("40x40 tile=7x7 band width=0 near=(random seed=1 ranks=" + r +
                            ") far=(block_cyclic grid=" + r + "x1)"),
      redist::Layout::parse("1000 tile=64 random seed=5 ranks=" + r),
      redist::Layout::parse("12x10 tile=5x3 esize=3 random seed=2 ranks=" + r),
  };
}

Tile tile_of(const redist::Coord& c) { return Tile{c[0], c.ndim() > 1 ? c[1] : 0}; }
}  // namespace

// rank_of is the layout's owner; data_of is LocalIndex's address, each local tile
// once, the tiles filling this rank's storage exactly; wrapped storage the same.
TEST_P(Collection, FollowsTheLayout) {
  for (const redist::Layout& layout : layouts(world_size())) {
    SCOPED_TRACE(layout.spec());
    rt::LayoutCollection a(layout, MPI_COMM_WORLD);
    const redist::LocalIndex local(layout, world_rank());
    const redist::Coord nt = layout.ntiles();
    ASSERT_EQ(a.tiles_m(), nt[0]);
    ASSERT_EQ(a.tiles_n(), layout.ndim() > 1 ? nt[1] : 1);
    ASSERT_EQ(a.storage_bytes(), static_cast<std::size_t>(local.elements() * layout.elem_size()));
    std::vector<char> wrapped_bytes(a.storage_bytes() + 1);
    rt::LayoutCollection w(layout, MPI_COMM_WORLD, wrapped_bytes.data(), wrapped_bytes.size());
    std::int64_t mine = 0, bytes = 0, wrong = 0;
    for (std::int64_t n = 0; n < a.tiles_n(); ++n)
      for (std::int64_t m = 0; m < a.tiles_m(); ++m) {
        const redist::Coord c = layout.ndim() > 1 ? redist::Coord{m, n} : redist::Coord{m};
        const int owner = layout.owner(c);
        wrong += a.rank_of({m, n}) != owner;
        if (owner != world_rank()) {
          wrong += a.is_local({m, n});
          continue;
        }
        ++mine;
        const redist::Box b = layout.tile_box(c);
        const std::int64_t offset = local.address(c, b.lo).offset * layout.elem_size();
        rt::Data d = a.data_of({m, n});
        wrong += d.bytes() != a.storage() + offset;
        wrong += d.size() != static_cast<std::size_t>(b.size.volume() * layout.elem_size());
        wrong += w.data_of({m, n}).bytes() != w.storage() + offset;
        wrong += a.box({m, n}).size.volume() != b.size.volume();
        bytes += static_cast<std::int64_t>(d.size());
      }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(mine, local.ntiles());
    EXPECT_EQ(bytes, static_cast<std::int64_t>(a.storage_bytes()));  // tiles fill the storage
    EXPECT_EQ(sum_all(mine), nt.volume());
    // Fresh storage is zeroed.
    std::vector<std::byte> zero(a.storage_bytes());
    EXPECT_TRUE(a.storage_bytes() == 0 || std::memcmp(a.storage(), zero.data(), zero.size()) == 0);
  }
}

TEST_P(Collection, Errors) {
  const int ranks = world_size(), rank = world_rank();
  rt::LayoutCollection a(redist::block_cyclic_layout({10, 10}, {4, 4}, {1, ranks}), MPI_COMM_WORLD);
  EXPECT_EQ(error_of([&] { a.rank_of({3, 0}); }),
            "tile (3, 0) is outside the 3x3 tiles of the collection '10x10 tile=4x4 block_cyclic grid=1x" +
                std::to_string(ranks) + "'");
  EXPECT_NE(error_of([&] { a.data_of({0, -1}); }).find("tile (0, -1) is outside the 3x3 tiles"),
            std::string::npos);
  if (ranks > 1) {
    const std::int64_t remote = rank == 0 ? 1 : 0;  // tile column `remote` is on rank `remote`
    EXPECT_NE(error_of([&] { a.data_of({0, remote}); })
                  .find("tile (0, " + std::to_string(remote) + ") of the collection '10x10 tile=4x4 "
                        "block_cyclic grid=1x" + std::to_string(ranks) + "' is owned by rank " +
                        std::to_string(remote) + ", not by rank " + std::to_string(rank)),
              std::string::npos);
  }
  EXPECT_EQ(error_of([&] { a.tile<float>({0, rank % 3}); }),
            "LayoutCollection: elements of '10x10 tile=4x4 block_cyclic grid=1x" + std::to_string(ranks) +
                "' have 8 bytes, not 4");
  auto make = [](const std::string& spec) {
    return error_of([&] { rt::LayoutCollection(redist::Layout::parse(spec), MPI_COMM_WORLD); });
  };
  EXPECT_NE(make("10x10 tile=4x4 storage=local_array").find("needs storage=tile"), std::string::npos);
  EXPECT_NE(make("4x4x4 tile=2x2x2").find("a layout has 1 or 2 dimensions; '4x4x4 tile=2x2x2 block_cyclic "
                                         "grid=1x1x1' has 3"),
            std::string::npos);
  EXPECT_NE(make("10x10 tile=4x4 block_cyclic grid=1x" + std::to_string(ranks + 1))
                .find("LayoutCollection: invalid layout '10x10 tile=4x4 block_cyclic grid=1x" +
                      std::to_string(ranks + 1) + "': the ownership needs " + std::to_string(ranks + 1) +
                      " ranks, the communicator has " + std::to_string(ranks)),
            std::string::npos);
  EXPECT_NE(make("10x10 tile=0x4").find("LayoutCollection: invalid layout"), std::string::npos);
  // Wrapped storage smaller than this rank's tiles (one 10x10 tile per rank).
  const redist::Layout each = redist::block_cyclic_layout({10, 10 * ranks}, {10, 10}, {1, ranks});
  std::vector<double> small(99);
  EXPECT_NE(error_of([&] {
              rt::LayoutCollection(each, MPI_COMM_WORLD, small.data(), small.size() * sizeof(double));
            }).find("rank " + std::to_string(rank) + " stores 100 elements of 8 bytes (800 bytes)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rt::LayoutCollection(each, MPI_COMM_WORLD, nullptr, 800); })
                .find("but got a null pointer to 800 bytes"),
            std::string::npos);
}

// P(m, n) adds its tile into the running sums of its tile row and stores them:
// A(i, j) becomes the sum of A(i, 0..j). The sums travel along each tile row
// across ranks (acc <- (n > 0) ? acc P(m, n-1)); the tiles are read and written in
// place through the collection (A <- A(m, n), -> A(m, n)).
TEST_P(Collection, RowPrefixSums) {
  const int ranks = world_size();
  const std::string owners = owner_list(6 * 5, [=](int t) { return (t * 7 / 3) % ranks; });
  const std::string r = std::to_string(ranks);
  for (const std::string& spec :
       {"41x37 tile=8x9 random seed=3 ranks=" + r,
        "29x31 tile=[0,1,6,13,14,20,29]x[0,9,10,25,30,31] table owners=" + owners,
        "33x40 tile=6x6 offset=1x4 band width=1 near=(block_cyclic grid=1x" + r + ") far=(random seed=9 ranks=" +
            r + ")"}) {
    SCOPED_TRACE(spec);
    const redist::Layout layout = redist::Layout::parse(spec);
    rt::LayoutCollection a(layout, MPI_COMM_WORLD);
    const std::int64_t rows = layout.shape()[0], cols = layout.shape()[1];
    auto value = [](std::int64_t i, std::int64_t j) { return static_cast<double>((i * 7 + j * 3) % 11 - 5); };
    for (redist::index_t o = 0; o < a.local().ntiles(); ++o) {
      const Tile t = tile_of(a.local().tile(o));
      const redist::Box b = a.box(t);
      double* p = a.tile<double>(t);
      for (std::int64_t j = 0; j < b.size[1]; ++j)
        for (std::int64_t i = 0; i < b.size[0]; ++i) p[i + j * b.size[0]] = value(b.lo[0] + i, b.lo[1] + j);
    }
    const std::int64_t mt = a.tiles_m(), nt = a.tiles_n();
    rt::TaskGraph g;
    auto& p = g.task_class("P");
    p.param("m", 0, mt - 1).param("n", 0, nt - 1).affinity(a, [](auto m, auto n) { return Tile{m, n}; });
    p.flow("acc")
        .in_if([](auto /*m*/, auto n) { return n > 0; }, rt::from(p, "acc", [](auto m, auto n) { return Targets{m, n - 1}; }))
        .out_if([=](auto /*m*/, auto n) { return n < nt - 1; }, rt::to(p, "acc", [](auto m, auto n) { return Targets{m, n + 1}; }));
    p.flow("A").in(rt::from(a, [](auto m, auto n) { return Tile{m, n}; })).out(rt::to(a, [](auto m, auto n) {
      return Tile{m, n};
    }));
    p.body([&a](rt::TaskContext& c, auto m, auto n) {
      const std::int64_t mb = a.rows_of(m), nb = a.cols_of(n);
      if (n == 0) std::memset(c.allocate("acc", mb * sizeof(double)).bytes(), 0, mb * sizeof(double));
      double* acc = c.as<double>("acc");
      double* t = c.as<double>("A");
      if (c.data("acc").size() != mb * sizeof(double) || c.data("A").size() != mb * nb * sizeof(double))
        throw std::runtime_error("wrong sizes");
      for (std::int64_t j = 0; j < nb; ++j)
        for (std::int64_t i = 0; i < mb; ++i) t[i + j * mb] = acc[i] += t[i + j * mb];
    });
    rt::Stats s = rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
    EXPECT_EQ(s.tasks, a.local().ntiles());
    std::vector<double> all = gather_on_root<double>(a);
    std::int64_t wrong = 0;
    if (world_rank() == 0) {
      for (std::int64_t i = 0; i < rows; ++i) {
        double sum = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
          sum += value(i, j);
          wrong += all[i + j * rows] != sum;
        }
      }
    }
    EXPECT_EQ(wrong, 0);
    ASSERT_TRUE(all_ranks(wrong == 0));
  }
}

// Options::lend: tasks of 3 ms on rank 0 (all tiles but one per other rank, in
// shared windows on one node) are lent to the idle ranks, which run them on rank
// 0's tiles: every tile written once, by its task; as many lent as borrowed, some
// borrowed. A body that makes its output anew (TaskContext::allocate) on a
// borrowing rank: the bytes go back to the owner with the task, and land as
// those written in place do. Every rank reads every tile, the others' where
// data_of finds them mapped.
TEST_P(Collection, LendsTasksToIdleRanksOfANode) {
  const int ranks = world_size(), rank = world_rank();
  redist::register_owner_function("runtime_test_lend", [ranks](const redist::Coord& t) {
    return t[0] > 0 && t[0] < ranks ? static_cast<int>(t[0]) : 0;
  });
  const redist::Layout layout =
      redist::Layout::parse("48x4 tile=4x4 function name=runtime_test_lend ranks=" + std::to_string(ranks));
  const std::int64_t mt = 12;
  for (bool made : {false, true}) {
    SCOPED_TRACE(made ? "outputs made anew" : "outputs in place");
    rt::LayoutCollection probe(layout, MPI_COMM_WORLD);
    const auto bytes = static_cast<redist::index_t>(probe.storage_bytes());
    void* mem = redist::shared_allocate(MPI_COMM_WORLD, bytes);
    {
      rt::LayoutCollection a(layout, MPI_COMM_WORLD, mem, static_cast<std::size_t>(bytes));
      a.share(redist::shared_ranges(MPI_COMM_WORLD, mem, bytes));
      rt::TaskGraph g;
      auto& t = g.task_class("T");
      t.param("m", 0, mt - 1).affinity(a, [](auto m) { return Tile{m, 0}; }).priority([](auto m) {
        return static_cast<int>(m);
      });
      t.flow("A").in(rt::from(a, [](auto m) { return Tile{m, 0}; })).out(rt::to(a, [](auto m) { return Tile{m, 0}; }));
      t.body([made](rt::TaskContext& c, auto m) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        const double* in = c.as<double>("A");
        double sum = 0;
        for (int i = 0; i < 16; ++i) sum += in[i];
        double* x = made ? c.allocate("A", 16 * sizeof(double)).as<double>() : c.as<double>("A");
        for (int i = 0; i < 16; ++i) x[i] = sum + static_cast<double>(m + 1 + i);
      });
      for (std::int64_t m = 0; m < mt; ++m)
        if (a.rank_of(Tile{m, 0}) == rank) std::memset(a.data_of(Tile{m, 0}).bytes(), 0, 16 * sizeof(double));
      rt::Options o = options_of(GetParam());
      o.lend = true;
      const rt::Stats s = rt::run(g, MPI_COMM_WORLD, o);
      MPI_Barrier(MPI_COMM_WORLD);
      for (std::int64_t m = 0; m < mt; ++m) {  // every tile, the others' through the mapping (data_of)
        const double* x = a.data_of(Tile{m, 0}).as<double>();
        for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], static_cast<double>(m + 1 + i)) << "tile " << m;
      }
      EXPECT_EQ(sum_all(s.tasks) + sum_all(s.lent), mt);
      EXPECT_EQ(sum_all(s.lent), sum_all(s.borrowed));
      if (ranks > 1) {
        EXPECT_GT(sum_all(s.borrowed), 0);
      } else {
        EXPECT_EQ(s.lent + s.borrowed, 0);
      }
    }
    redist::shared_free(mem);
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, Collection, RUNTIME_CONFIGS);
