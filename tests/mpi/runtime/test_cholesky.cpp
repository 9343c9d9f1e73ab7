// Tiled Cholesky (paper 004, Fig. 1; apps/cholesky) on 1-4 ranks over layouts of
// every ownership kind: block-cyclic grids, random, a table with explicit (uneven)
// tile boundaries, a band, a registered function; ragged edge tiles. The factor is
// gathered on rank 0 by the core's redistribution and checked against LAPACK
// dpotrf of the same matrix and by the residual ||A - L L^T|| / ||A||.
#include <lapacke.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <span>

#include "cholesky/cholesky.hpp"
#include "redist/shm.hpp"
#include "test_util.hpp"

namespace chol = redist::cholesky;

class Cholesky : public ::testing::TestWithParam<Config> {};

namespace {
// Closest-to-square grid with P <= Q (paper 004, sec. IV-C).
std::pair<int, int> grid_of(int ranks) {
  int p = 1;
  for (int d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) p = d;
  return {p, ranks / p};
}

// The layouts the factorization runs on, for `ranks` ranks.
std::vector<redist::Layout> layouts(int ranks) {
  auto [p, q] = grid_of(ranks);
  const std::string r = std::to_string(ranks);
  std::vector<redist::Layout> out;
  // N not a multiple of NB: the last tile row/column is partial.
  for (auto [n, nb] : {std::pair<int, int>{100, 16}, {64, 64}, {45, 8}})
    out.push_back(redist::block_cyclic_layout({n, n}, {nb, nb}, {p, q}));
  out.push_back(redist::Layout::parse("45x45 tile=8x8 random seed=7 ranks=" + r));
  // Explicit boundaries, one 1x1 tile among them; owners from a table.
  const std::string owners = owner_list(25, [=](int t) { return (t * 3 + t / 5) % ranks; });
  const std::string b = "[0,7,8,20,31,37]";
  out.push_back(redist::Layout::parse("37x37 tile=" + b + "x" + b + " table owners=" + owners));
  out.push_back(redist::Layout::parse("60x60 tile=9x9 band width=1 near=(block_cyclic grid=1x" + r +
                                      ") far=(random seed=3 ranks=" + r + ")"));
  redist::register_owner_function("runtime_test_skew", [ranks](const redist::Coord& t) {
    return static_cast<int>((t[0] + 2 * t[1]) % ranks);
  });
  out.push_back(redist::Layout::parse("50x50 tile=11x11 function name=runtime_test_skew ranks=" + r));
  return out;
}
using Mapping = std::vector<std::span<const std::byte>>;

// The Cholesky of fill_spd on `layout`, its storage (`bytes` per rank) in shared
// windows on nodes of `node` ranks (0: the machine's) and shared: the factor
// gathered on rank 0 and the run's statistics. `check` sees the mapping first.
std::pair<std::vector<double>, rt::Stats> on_shared(const redist::Layout& layout, redist::index_t bytes, int node,
                                                    const rt::Options& o,
                                                    const std::function<void(const Mapping&)>& check = {}) {
  void* mem = redist::shared_allocate(MPI_COMM_WORLD, bytes, node);
  std::pair<std::vector<double>, rt::Stats> out;
  {
    rt::LayoutCollection a(layout, MPI_COMM_WORLD, mem, static_cast<std::size_t>(bytes));
    const Mapping mapped = redist::shared_ranges(MPI_COMM_WORLD, mem, bytes);
    if (check) check(mapped);
    a.share(mapped);
    chol::fill_spd(a);
    rt::TaskGraph g = chol::task_graph(a);
    out.second = rt::run(g, MPI_COMM_WORLD, o);
    out.first = gather_on_root<double>(a);
  }
  redist::shared_free(mem);
  return out;
}
}  // namespace

TEST_P(Cholesky, MatchesLapack) {
  for (const redist::Layout& layout : layouts(world_size())) {
    SCOPED_TRACE(layout.spec());
    const int n = static_cast<int>(layout.shape()[0]);
    rt::LayoutCollection a(layout, MPI_COMM_WORLD);
    chol::fill_spd(a);
    rt::TaskGraph g = chol::task_graph(a);
    rt::Stats s = rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
    const std::int64_t nt = a.tiles_m();
    EXPECT_EQ(sum_all(s.tasks), nt + nt * (nt - 1) + nt * (nt - 1) * (nt - 2) / 6);  // Fig. 1's tasks
    std::vector<double> l = gather_on_root<double>(a);
    bool ok = true;
    if (world_rank() == 0) {
      std::vector<double> ref(static_cast<std::size_t>(n) * n), orig(ref.size());
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) orig[i + j * n] = ref[i + j * n] = chol::spd_element(i, j, n);
      ASSERT_EQ(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, ref.data(), n), 0);
      double diff = 0, norm = 0, res = 0, anorm = 0;
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {
          diff = std::max(diff, std::abs(l[i + j * n] - ref[i + j * n]));
          norm = std::max(norm, std::abs(ref[i + j * n]));
          double llt = 0;  // (L L^T)(i, j)
          for (int k = 0; k <= j; ++k) llt += l[i + k * n] * l[j + k * n];
          res += (orig[i + j * n] - llt) * (orig[i + j * n] - llt);
          anorm += orig[i + j * n] * orig[i + j * n];
        }
      EXPECT_LT(diff / norm, 1e-12);
      EXPECT_LT(std::sqrt(res / anorm), 1e-14 * n);
      // The strict upper triangle is not touched: still A.
      double upper = 0;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) upper = std::max(upper, std::abs(l[i + j * n] - orig[i + j * n]));
      EXPECT_EQ(upper, 0.0);
      ok = diff / norm < 1e-12 && upper == 0.0;
    }
    ASSERT_TRUE(all_ranks(ok));
  }
}

// Not a square matrix of doubles with equal row and column tiles: a clear error.
TEST_P(Cholesky, RejectsOtherMatrices) {
  for (const char* spec : {"40x30 tile=8x8", "40x40 tile=8x10", "40x40 tile=8x8 esize=4", "40 tile=8"}) {
    rt::LayoutCollection a(redist::Layout::parse(spec), MPI_COMM_WORLD);
    try {
      chol::task_graph(a);
      ADD_FAILURE() << "no error for " << spec;
    } catch (const redist::Error& e) {
      EXPECT_NE(std::string(e.what()).find("cholesky::task_graph: needs a square matrix of doubles"),
                std::string::npos)
          << e.what();
    }
  }
}

// Storage in shared windows (redist::shared_allocate, LayoutCollection::share with
// redist::shared_ranges): a tile that a task of another rank of the node reads is
// read where its producer left it (Options::read_in_place), nothing moves; with
// eager_limit 0 every payload would otherwise travel by rendezvous. Nodes of the
// whole machine, of 1 rank (nothing shared) and of 2 (3-4 ranks: some pairs in
// place, the others by message), and read_in_place off: the same bits as the run
// on the heap every time, the reads in place counted where they can happen.
TEST_P(Cholesky, SharedStorageReadsTilesInPlace) {
  const int ranks = world_size(), rank = world_rank();
  auto [p, q] = grid_of(ranks);
  const std::vector<redist::Layout> cases = {
      redist::block_cyclic_layout({100, 100}, {16, 16}, {p, q}),
      redist::Layout::parse("45x45 tile=8x8 random seed=7 ranks=" + std::to_string(ranks))};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const redist::Layout& layout = cases[c];
    SCOPED_TRACE(layout.spec());
    rt::Options o = options_of(GetParam());
    o.eager_limit = 0;
    rt::LayoutCollection heap(layout, MPI_COMM_WORLD);
    chol::fill_spd(heap);
    rt::TaskGraph hg = chol::task_graph(heap);
    rt::run(hg, MPI_COMM_WORLD, o);
    const std::vector<double> want = gather_on_root<double>(heap);
    const auto bytes = static_cast<redist::index_t>(heap.storage_bytes());
    for (int node : {0, 1, 2})
      for (bool in_place : {true, false}) {
        SCOPED_TRACE("node size " + std::to_string(node) + (in_place ? ", in place" : ", off"));
        o.read_in_place = in_place;
        const auto [got, s] = on_shared(layout, bytes, node, o, [&](const Mapping& mapped) {
          ASSERT_EQ(mapped.size(), static_cast<std::size_t>(ranks));
          for (int r = 0; r < ranks; ++r) {  // mapped exactly where r is on this rank's node
            const bool same_node = node == 0 || r / node == rank / node;
            EXPECT_EQ(!mapped[static_cast<std::size_t>(r)].empty(), same_node && bytes > 0) << "rank " << r;
          }
        });
        if (rank == 0) {
          ASSERT_EQ(got.size(), want.size());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0);
        }
        const std::int64_t read = sum_all(s.read_in_place), moved = sum_all(s.rendezvous_bytes);
        const bool pairs = ranks > 1 && (node == 0 || node == 2);  // ranks 0 and 1 share a node
        if (!in_place || !pairs) {
          EXPECT_EQ(read, 0);
        }
        if (in_place && pairs && c == 0) {  // block-cyclic: 0 and 1 exchange tiles
          EXPECT_GT(read, 0);
        }
        // Every tile that crosses ranks in the Cholesky is final (POTRF's, TRSM's):
        // on one node none moves.
        if (in_place && node == 0) {
          EXPECT_EQ(moved, 0);
        }
        if (!in_place && ranks > 1 && c == 0) {
          EXPECT_GT(moved, 0);
        }
      }
  }
}

// Options::lend: ranks of a node lend each other ready tasks whose tiles lie in
// their shared windows. Nearly every tile on rank 0 (the others borrow),
// and block-cyclic tiles (both ways); whole machine and nodes of 2: the same bits
// as the run on the heap, every task run once (run here or lent and returned), as
// many lent as borrowed. (Whether any is lent depends on timing here: tasks of
// microseconds; Collection.LendsTasksToIdleRanksOfANode makes sure some are.)
TEST_P(Cholesky, LendsTasksAcrossRanksOfANode) {
  const int ranks = world_size();
  auto [p, q] = grid_of(ranks);
  // Rank 0 owns every tile but diagonal tile (r, r) of each other rank r (a rank
  // of no storage shares none: LayoutCollection::share).
  redist::register_owner_function("runtime_test_rank0", [ranks](const redist::Coord& t) {
    return t[0] == t[1] && t[0] < ranks ? static_cast<int>(t[0]) : 0;
  });
  const std::vector<redist::Layout> cases = {
      redist::Layout::parse("100x100 tile=10x10 function name=runtime_test_rank0 ranks=" + std::to_string(ranks)),
      redist::block_cyclic_layout({100, 100}, {16, 16}, {p, q})};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const redist::Layout& layout = cases[c];
    SCOPED_TRACE(layout.spec());
    rt::Options o = options_of(GetParam());
    o.eager_limit = 0;  // cross-rank tiles read in place, so tasks reading them can be lent
    rt::LayoutCollection heap(layout, MPI_COMM_WORLD);
    chol::fill_spd(heap);
    rt::TaskGraph hg = chol::task_graph(heap);
    rt::run(hg, MPI_COMM_WORLD, o);
    const std::vector<double> want = gather_on_root<double>(heap);
    const std::int64_t nt = heap.tiles_m(), tasks = nt + nt * (nt - 1) + nt * (nt - 1) * (nt - 2) / 6;
    const auto bytes = static_cast<redist::index_t>(heap.storage_bytes());
    for (int node : {0, 2}) {
      SCOPED_TRACE("node size " + std::to_string(node));
      o.lend = true;
      const auto [got, s] = on_shared(layout, bytes, node, o);
      if (world_rank() == 0) {
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0);
      }
      EXPECT_EQ(sum_all(s.tasks) + sum_all(s.lent), tasks);
      EXPECT_EQ(sum_all(s.lent), sum_all(s.borrowed));
      if (ranks == 1) {
        EXPECT_EQ(s.lent + s.borrowed, 0);
      }
    }
  }
}

// share() takes one entry per rank, this rank's own its storage.
TEST_P(Cholesky, ShareChecksTheMapping) {
  rt::LayoutCollection a(redist::Layout::parse("40x40 tile=8x8"), MPI_COMM_WORLD);
  std::vector<std::span<const std::byte>> none(static_cast<std::size_t>(world_size()) + 1);
  EXPECT_THROW(a.share(none), redist::Error);
  none.pop_back();
  a.share(none);  // own entry empty: nothing shared
  EXPECT_TRUE(a.storage_of(world_rank()).empty());
  if (a.storage_bytes() > 0) {
    std::vector<std::byte> other(a.storage_bytes());
    none[static_cast<std::size_t>(world_rank())] = {other.data(), other.size()};
    try {
      a.share(none);
      ADD_FAILURE() << "no error for another range";
    } catch (const redist::Error& e) {
      EXPECT_NE(std::string(e.what()).find("own entry must be its storage"), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, Cholesky, RUNTIME_CONFIGS);
