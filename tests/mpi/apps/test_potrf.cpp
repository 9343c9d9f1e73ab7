// redist::apps::potrf: the caller's matrix in ScaLAPACK storage (a poor 1xP grid,
// odd N, ragged tiles, leading dimensions that differ by rank), in tile storage
// with random owners, and already in the working layout. The result, gathered by
// the core's redistribution, must be bit for bit the tiled Cholesky run directly
// on the working layout, and match LAPACK dpotrf (rel. 1e-12, residual). Bad input
// gives the same error on every rank and leaves the caller's data untouched.
#include <lapacke.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "apps_util.hpp"
#include "cholesky/cholesky.hpp"
#include "redist/apps.hpp"
#include "roundtrip/huge_pages.hpp"

namespace apps = redist::apps;
using redist::cholesky::spd_element;

class Potrf : public ::testing::TestWithParam<int> {};

namespace {
constexpr int kN = 77;
constexpr double kSentinel = -12345.678;  // the caller's strict upper triangle

apps::Options options(int threads) {
  apps::Options o;
  o.tile = 16;  // 77 = 4 x 16 + 13: a ragged last tile
  o.threads = threads;
  return o;
}

// L of the tiled Cholesky run directly on `work`, gathered on rank 0 (whole matrix).
std::vector<double> direct(const redist::Layout& work, int threads) {
  rt::LayoutCollection a(work, MPI_COMM_WORLD);
  redist::cholesky::fill_spd(a);
  rt::TaskGraph g = redist::cholesky::task_graph(a);
  rt::Options o;
  o.threads = threads;
  rt::run(g, MPI_COMM_WORLD, o);
  return gather_on_root<double>(a);
}

// apps::potrf with `om` on an SPD matrix of order n in the user's layout, gathered
// on rank 0: true there when its bits equal `ref`'s (true on the other ranks).
bool potrf_bits_equal(const redist::Layout& user, int n, const apps::Options& om, const std::vector<double>& ref) {
  std::vector<double> a = make_local(user, [n](auto i, auto j) { return spd_element(i, j, n); });
  apps::potrf(user, a.data(), MPI_COMM_WORLD, om);
  const std::vector<double> got = gather_root(user, a.data());
  return world_rank() != 0 || std::memcmp(got.data(), ref.data(), got.size() * sizeof(double)) == 0;
}

// The caller's layouts: ScaLAPACK local arrays on a 1xP grid (one with a larger
// leading dimension on every rank, a different one per rank), random owners in
// tile storage, and the working layout itself.
std::vector<redist::Layout> user_layouts(const redist::Layout& work) {
  const std::string p = std::to_string(world_size());
  std::vector<redist::Layout> out;
  out.push_back(redist::Layout::parse("77x77 tile=10x10 block_cyclic grid=1x" + p + " storage=local_array"));
  const redist::Layout px1 = redist::Layout::parse("77x77 tile=9x12 block_cyclic grid=" + p + "x1 storage=local_array");
  const redist::index_t rows = redist::LocalIndex(px1, world_rank()).local_extent()[0];
  out.push_back(redist::Layout::parse("77x77 tile=9x12 block_cyclic grid=" + p + "x1 storage=local_array ld=" +
                                      std::to_string(rows + 3 + world_rank())));
  out.push_back(redist::Layout::parse("77x77 tile=7x7 random seed=5 ranks=" + p));
  out.push_back(work);
  return out;
}
}  // namespace

TEST_P(Potrf, BitIdenticalToDirectAndMatchesLapack) {
  const apps::Options o = options(GetParam());
  const redist::Layout work = apps::work_layout(kN, kN, world_size(), o);
  const std::vector<double> ref = direct(work, o.threads);
  // Each layout twice: fresh working memory, then a Workspace kept across the calls
  // (on even ranks only: ranks may differ), which holds the previous call's L.
  apps::Workspace ws;
  for (const redist::Layout& user : user_layouts(work))
    for (apps::Workspace* w : {static_cast<apps::Workspace*>(nullptr), world_rank() % 2 == 0 ? &ws : nullptr}) {
      SCOPED_TRACE(user.spec() + (w ? " with a workspace" : ""));
      // The strict upper triangle holds a sentinel: potrf must neither read it (a
      // kernel that did would not match the direct run, whose upper triangle holds A)
      // nor write it (only the lower tiles travel back).
      std::vector<double> a =
          make_local(user, [](auto i, auto j) { return i < j ? kSentinel : spd_element(i, j, kN); });
      apps::Options ow = o;
      ow.workspace = w;
      const apps::Report r = apps::potrf(user, a.data(), MPI_COMM_WORLD, ow);
      if (w && r.moved) {  // the working copy stays in the workspace after the call
        EXPECT_GE(ws.bytes(), static_cast<std::size_t>(redist::LocalIndex(work, world_rank()).elements()) * 8);
      }
      EXPECT_EQ(r.work, work.spec());
      EXPECT_EQ(r.moved, !(user == work));
      if (!r.moved) {
        EXPECT_EQ(r.to_seconds + r.back_seconds, 0.0);
      }
      const std::vector<double> got = gather_root(user, a.data());
      bool same = true;
      if (world_rank() == 0) {
        ASSERT_EQ(got.size(), ref.size());
        for (int j = 0; j < kN; ++j) {
          const auto col = static_cast<std::size_t>(j) * kN;
          same = same && std::memcmp(&got[col + j], &ref[col + j], (kN - j) * sizeof(double)) == 0;
          for (int i = 0; i < j; ++i) same = same && std::memcmp(&got[col + i], &kSentinel, sizeof(double)) == 0;
        }
        EXPECT_TRUE(same) << "the round trip differs from the tiled Cholesky on " << work.spec()
                          << " (lower triangle) or changed the strict upper triangle";
      }
      ASSERT_TRUE(all_ranks(same));
    }
  // The independent oracle: LAPACK dpotrf of the same matrix, and the residual.
  if (world_rank() == 0) {
    const int n = kN;
    std::vector<double> lap(static_cast<std::size_t>(n) * n), orig(lap.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) orig[i + j * n] = lap[i + j * n] = spd_element(i, j, n);
    ASSERT_EQ(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, lap.data(), n), 0);
    double diff = 0, norm = 0, res = 0, anorm = 0, upper = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        if (i < j) {
          upper = std::max(upper, std::abs(ref[i + j * n] - orig[i + j * n]));
          continue;
        }
        diff = std::max(diff, std::abs(ref[i + j * n] - lap[i + j * n]));
        norm = std::max(norm, std::abs(lap[i + j * n]));
        double llt = 0;
        for (int k = 0; k <= j; ++k) llt += ref[i + k * n] * ref[j + k * n];
        res += (orig[i + j * n] - llt) * (orig[i + j * n] - llt);
        anorm += orig[i + j * n] * orig[i + j * n];
      }
    EXPECT_LT(diff / norm, 1e-12);
    EXPECT_LT(std::sqrt(res / anorm), 1e-14 * n);
    EXPECT_EQ(upper, 0.0) << "the strict upper triangle must be left as it was";
  }
}

// A submatrix (pdpotrf's A(IA, JA)) of a larger matrix: its lower triangle comes out
// bit for bit as the tiled Cholesky of the same matrix run directly on the working
// layout, and every other element of the caller's matrix (the sub's strict upper
// triangle, everything around it) is left as it was. ScaLAPACK storage with the sub
// across tile boundaries, random owners with it on them, the working layout's own
// tiles inside a larger matrix, and the whole matrix as a Submatrix at 0 (the
// working layout itself: no copy). An empty sub is LAPACK's quick return.
TEST_P(Potrf, SubmatrixBitIdenticalAndTheRestUntouched) {
  const apps::Options o = options(GetParam());
  const redist::Layout work = apps::work_layout(kN, kN, world_size(), o);
  const std::vector<double> ref = direct(work, o.threads);
  const std::string p = std::to_string(world_size());
  struct Case {
    redist::Layout user;
    redist::Coord at;
  };
  const std::vector<Case> cases = {
      {redist::Layout::parse("100x95 tile=10x10 block_cyclic grid=1x" + p + " storage=local_array"), {13, 9}},
      {redist::Layout::parse("91x84 tile=7x7 random seed=3 ranks=" + p), {14, 7}},
      {apps::work_layout(kN + 16, kN + 32, world_size(), o), {16, 32}},  // the working tiles, shifted
      {work, {0, 0}},
  };
  const auto outside = [](redist::index_t i, redist::index_t j) { return 1000.0 + static_cast<double>(i + 1000 * j); };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.user.spec() + " at " + c.at.str());
    const redist::index_t r0 = c.at[0], c0 = c.at[1];
    const auto inside = [&](redist::index_t i, redist::index_t j) {
      return i >= r0 && i < r0 + kN && j >= c0 && j < c0 + kN;
    };
    std::vector<double> a = make_local(c.user, [&](auto i, auto j) {
      return inside(i, j) && i - r0 >= j - c0 ? spd_element(i - r0, j - c0, kN) : outside(i, j);
    });
    const apps::Report r = apps::potrf(c.user, a.data(), apps::Submatrix{c.at, {kN, kN}}, MPI_COMM_WORLD, o);
    EXPECT_EQ(r.work, work.spec());
    EXPECT_EQ(r.moved, !(c.user == work));
    const std::vector<double> got = gather_root(c.user, a.data());
    bool same = true;
    if (world_rank() == 0) {
      const redist::index_t rows = c.user.shape()[0];
      for (redist::index_t j = 0; j < c.user.shape()[1]; ++j)
        for (redist::index_t i = 0; i < rows; ++i) {
          const double g = got[static_cast<std::size_t>(i + j * rows)];
          const bool lower = inside(i, j) && i - r0 >= j - c0;
          const double want = lower ? ref[static_cast<std::size_t>(i - r0 + (j - c0) * kN)] : outside(i, j);
          same = same && std::memcmp(&g, &want, sizeof(double)) == 0;
        }
      EXPECT_TRUE(same) << "the submatrix's L differs from the tiled Cholesky on " << work.spec()
                        << ", or an element outside its lower triangle changed";
    }
    ASSERT_TRUE(all_ranks(same));
  }
  // An empty submatrix: nothing read or written (LAPACK's N = 0).
  const redist::Layout user = cases[0].user;
  std::vector<double> a = make_local(user, outside);
  const std::vector<double> before = a;
  apps::potrf(user, a.data(), apps::Submatrix{{5, 5}, {0, 0}}, MPI_COMM_WORLD, o);
  EXPECT_TRUE(a == before);
}

// The model's tile (Options::tile = 0) on the default grid, from ScaLAPACK storage.
TEST_P(Potrf, ModelTileMatchesLapack) {
  const int n = 301;
  apps::Options o;
  o.threads = GetParam();
  const redist::Layout user =
      redist::Layout::parse("301x301 tile=64x64 block_cyclic grid=1x" + std::to_string(world_size()) +
                            " storage=local_array");
  std::vector<double> a = make_local(user, [](auto i, auto j) { return spd_element(i, j, n); });
  const apps::Report r = apps::potrf(user, a.data(), MPI_COMM_WORLD, o);
  EXPECT_EQ(r.work, apps::work_layout(n, n, world_size(), o).spec());
  EXPECT_NE(r.work.find("tile=128x128"), std::string::npos) << r.work;  // model_tile(301, cores)
  EXPECT_TRUE(r.moved);
  EXPECT_GT(r.tasks + 1, 0);
  const std::vector<double> got = gather_root(user, a.data());
  if (world_rank() == 0) {
    std::vector<double> lap(static_cast<std::size_t>(n) * n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) lap[i + j * n] = spd_element(i, j, n);
    ASSERT_EQ(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, lap.data(), n), 0);
    double diff = 0, norm = 0;
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        diff = std::max(diff, std::abs(got[i + j * n] - lap[i + j * n]));
        norm = std::max(norm, std::abs(lap[i + j * n]));
      }
    EXPECT_LT(diff / norm, 1e-12);
  }
}

// Every runtime::CommMode gives the same bits (the default, workers, among them).
TEST_P(Potrf, EveryCommModeBitIdentical) {
  const apps::Options o = options(GetParam());
  EXPECT_EQ(apps::Options().comm_mode, rt::CommMode::workers);
  const redist::Layout work = apps::work_layout(kN, kN, world_size(), o);
  const std::vector<double> ref = direct(work, o.threads);
  const redist::Layout user = redist::Layout::parse("77x77 tile=10x10 block_cyclic grid=1x" +
                                                    std::to_string(world_size()) + " storage=local_array");
  for (rt::CommMode mode : {rt::CommMode::workers, rt::CommMode::multiple, rt::CommMode::funneled}) {
    SCOPED_TRACE(static_cast<int>(mode));
    apps::Options om = o;
    om.comm_mode = mode;
    EXPECT_TRUE(all_ranks(potrf_bits_equal(user, kN, om, ref)));
  }
}

namespace {

// Order 150 in working tiles of 48 (3 x 48 + 6: a ragged last tile; 48 x 48
// doubles, 18 KB, above the runtime's eager limit): the options, the direct run's
// bits, and the caller's ScaLAPACK layout (tiles of 10 on 1xP).
struct TilesOf48 {
  int n;
  apps::Options o;
  std::vector<double> ref;
  redist::Layout user;
};
TilesOf48 tiles_of_48(int threads) {
  TilesOf48 c{150, options(threads), {}, {}};
  c.o.tile = 48;
  c.ref = direct(apps::work_layout(c.n, c.n, world_size(), c.o), c.o.threads);
  c.user = redist::Layout::parse("150x150 tile=10x10 block_cyclic grid=1x" + std::to_string(world_size()) +
                                 " storage=local_array");
  return c;
}

}  // namespace

// Tiles above the runtime's eager limit (48 x 48 doubles: 18 KB > 16 KB) travel by
// rendezvous, pushed with their activation (apps::Options::push, the default) or
// asked for with GET: the same bits either way, in every comm_mode, as the direct
// run (which asks with GET).
TEST_P(Potrf, PushedTilesBitIdentical) {
  EXPECT_TRUE(apps::Options().push);
  const auto [n, o, ref, user] = tiles_of_48(GetParam());
  for (bool push : {true, false})
    for (rt::CommMode mode : {rt::CommMode::workers, rt::CommMode::multiple, rt::CommMode::funneled}) {
      SCOPED_TRACE(std::string(push ? "push " : "get ") + std::to_string(static_cast<int>(mode)));
      apps::Options om = o;
      om.push = push;
      om.comm_mode = mode;
      EXPECT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref)));
    }
}

// The caller's matrix already in the working layout and in shared windows: tasks
// read the tiles of the other ranks of their node where they lie
// (apps::Options::read_in_place; tiles of 48 x 48 doubles, above the eager limit),
// on whole nodes and on nodes of 1 and 2 ranks, and with tasks lent across the
// ranks of a node (apps::Options::lend): the same bits as the direct run.
TEST_P(Potrf, SharedStorageBitIdentical) {
  constexpr int n = 150;
  apps::Options o = options(GetParam());
  o.tile = 48;
  EXPECT_TRUE(apps::Options().read_in_place);
  EXPECT_FALSE(apps::Options().lend);
  const redist::Layout work = apps::work_layout(n, n, world_size(), o);
  const std::vector<double> ref = direct(work, o.threads);
  for (int node : {0, 1, 2})
    for (int mode : {0, 1, 2}) {  // in place; not; in place and lending
      const bool in_place = mode != 1;
      SCOPED_TRACE("node size " + std::to_string(node) + (in_place ? ", in place" : ", off") + (mode == 2 ? ", lend" : ""));
      apps::Options om = o;
      om.read_in_place = in_place;
      om.lend = mode == 2;
      SharedCopy a(make_local(work, [](auto i, auto j) { return spd_element(i, j, n); }), node);
      const apps::Report r = apps::potrf(work, a.data(), MPI_COMM_WORLD, om);
      EXPECT_FALSE(r.moved);
      const std::vector<double> got = gather_root(work, a.data());
      EXPECT_TRUE(all_ranks(world_rank() != 0 || std::memcmp(got.data(), ref.data(), got.size() * sizeof(double)) == 0));
    }
}

// apps::Options::shared_work: the caller's matrix on the heap in ScaLAPACK storage,
// moved into a working copy in shared windows, where tasks read the tiles of the
// other ranks in place (and lend, and not in place): the same bits as the direct
// run; then a hundred calls in a row, each making and freeing its window (the free
// is collective: a rank that skipped it would leave the others waiting).
TEST_P(Potrf, SharedWorkCopyBitIdentical) {
  EXPECT_FALSE(apps::Options().shared_work);
  const auto [n, o, ref, user] = tiles_of_48(GetParam());
  for (int mode : {0, 1, 2}) {  // in place; not; in place and lending
    SCOPED_TRACE(mode);
    apps::Options om = o;
    om.shared_work = true;
    om.read_in_place = mode != 1;
    om.lend = mode == 2;
    EXPECT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref)));
  }
  apps::Options om = o;
  om.shared_work = true;
  om.tile = 16;
  const std::vector<double> small = direct(apps::work_layout(40, 40, world_size(), om), om.threads);
  const redist::Layout user40 = redist::Layout::parse("40x40 tile=7x7 block_cyclic grid=1x" +
                                                      std::to_string(world_size()) + " storage=local_array");
  for (int k = 0; k < 100; ++k) ASSERT_TRUE(all_ranks(potrf_bits_equal(user40, 40, om, small))) << "call " << k;
}

// shared_work with a Workspace: the window is kept across calls (the same address
// on a repeated call of the same size or smaller, a new one for a larger), the bits
// the direct run's every time; every rank must pass a workspace (agreed); another
// set of ranks than the windows' is an agreed error; release() frees them all.
TEST_P(Potrf, SharedWorkWorkspaceKeepsItsWindows) {
  const auto [n, o, ref, user] = tiles_of_48(GetParam());
  apps::Options om = o;
  om.shared_work = true;
  apps::Workspace ws;
  om.workspace = &ws;
  const std::size_t own = static_cast<std::size_t>(
      redist::LocalIndex(apps::work_layout(n, n, world_size(), om), world_rank()).elements() * 8);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref))) << "call " << k;
    EXPECT_EQ(ws.bytes(), own);  // one window, kept
  }
  // smaller: the window kept; larger again: the same
  apps::Options small = o;
  small.tile = 16;
  small.shared_work = true;
  small.workspace = &ws;
  const std::vector<double> ref40 = direct(apps::work_layout(40, 40, world_size(), small), small.threads);
  const redist::Layout user40 = redist::Layout::parse("40x40 tile=7x7 block_cyclic grid=1x" +
                                                      std::to_string(world_size()) + " storage=local_array");
  ASSERT_TRUE(all_ranks(potrf_bits_equal(user40, 40, small, ref40)));
  EXPECT_EQ(ws.bytes(), own);
  ASSERT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref)));
  EXPECT_EQ(ws.bytes(), own);
  // a workspace on some ranks only: agreed (the windows' frees are collective)
  if (world_size() > 1) {
    apps::Options some = om;
    if (world_rank() == 1) some.workspace = nullptr;
    std::vector<double> a = make_local(user, [n](auto i, auto j) { return spd_element(i, j, n); });
    expect_collective_error([&] { apps::potrf(user, a.data(), MPI_COMM_WORLD, some); }, "options differ");
  }
  // another set of ranks (rank 0 alone): agreed over that communicator
  MPI_Comm self;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, world_rank() == 0 ? 0 : MPI_UNDEFINED, 0, &self), MPI_SUCCESS);
  if (world_rank() == 0 && world_size() > 1) {
    const redist::Layout one = redist::Layout::parse("40x40 tile=7x7 block_cyclic grid=1x1 storage=local_array");
    std::vector<double> a = make_local(one, [](auto i, auto j) { return spd_element(i, j, 40); });
    try {
      apps::potrf(one, a.data(), self, small);
      ADD_FAILURE() << "a workspace's windows used over other ranks";
    } catch (const redist::Error& e) {
      EXPECT_NE(std::string(e.what()).find("its shared windows were made by other ranks"), std::string::npos)
          << e.what();
    }
  }
  if (self != MPI_COMM_NULL) MPI_Comm_free(&self);
  ws.release();  // collective: every rank frees its windows
  EXPECT_EQ(ws.bytes(), 0u);
  ASSERT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref)));  // a new window after release()
  EXPECT_EQ(ws.bytes(), own);
}

TEST_P(Potrf, BadInputIsACollectiveError) {
  const std::string p = std::to_string(world_size());
  const apps::Options o = options(GetParam());
  auto call = [&](const std::string& spec, void* data, const apps::Options& opt) {
    return [=] { apps::potrf(redist::Layout::parse(spec), data, MPI_COMM_WORLD, opt); };
  };
  std::vector<double> buf(77 * 77, 1.0);
  expect_collective_error(call("40x30 tile=8x8 block_cyclic grid=1x" + p, buf.data(), o),
                          "potrf: the matrix must be square");
  expect_collective_error(call("40x40 tile=8x8 esize=4 block_cyclic grid=1x" + p, buf.data(), o),
                          "must hold doubles");
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p + " storage=tile_pointers", buf.data(), o),
                          "is one buffer per rank: storage=tile or local_array, got storage=tile_pointers");
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + std::to_string(world_size() + 1),
                               buf.data(), o),
                          "potrf: the matrix: ");
  apps::Options bad_grid = o;
  bad_grid.grid = redist::Coord{world_size() + 1, 1};
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, buf.data(), bad_grid),
                          "grid of the working layout must be PxQ");
  apps::Options bad_mode = o;
  bad_mode.comm_mode = static_cast<rt::CommMode>(7);
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, buf.data(), bad_mode),
                          "potrf: options.comm_mode must be runtime::CommMode::multiple, funneled or workers, got 7");
  // Different comm modes on different ranks.
  if (world_size() > 1) {
    apps::Options mixed = o;
    mixed.comm_mode = world_rank() == 0 ? rt::CommMode::multiple : rt::CommMode::workers;
    expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, buf.data(), mixed), "options differ");
    apps::Options tiles = o;  // the differing field alone named in the message
    tiles.tile = world_rank() == 0 ? 8 : 16;
    expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, buf.data(), tiles),
                            "rank 0 has 'tile=8', rank 1 has 'tile=16'");
  }
  apps::Options bad_strategy = o;
  bad_strategy.strategy = "carrier_pigeon";
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, buf.data(), bad_strategy),
                          "carrier_pigeon");
  // MPI_COMM_NULL (on every rank here): refused locally, as make_plan does; it
  // ended the job in MPI_Comm_rank (MPI_ERRORS_ARE_FATAL). geqrf and gemm begin
  // with the same check.
  for (int k = 0; k < 3; ++k)
    try {
      const redist::Layout l = redist::Layout::parse("40x40 tile=8x8 block_cyclic grid=1x" + p);
      if (k == 0) apps::potrf(l, buf.data(), MPI_COMM_NULL, o);
      if (k == 1) apps::geqrf(l, buf.data(), MPI_COMM_NULL, o);
      if (k == 2) apps::gemm(1.0, l, buf.data(), l, buf.data(), 0.0, l, buf.data(), MPI_COMM_NULL, o);
      ADD_FAILURE() << "call " << k << " accepted MPI_COMM_NULL";
    } catch (const redist::Error& e) {
      EXPECT_NE(std::string(e.what()).find("comm is MPI_COMM_NULL"), std::string::npos) << e.what();
    }
  // Submatrices that do not lie in the matrix, are not square, or differ by rank.
  const std::string l40 = "40x40 tile=8x8 block_cyclic grid=1x" + p;
  auto sub = [&](const redist::Coord& at, const redist::Coord& size) {
    return [=, &buf] {
      apps::potrf(redist::Layout::parse(l40), buf.data(), apps::Submatrix{at, size}, MPI_COMM_WORLD, o);
    };
  };
  expect_collective_error(sub({5, 5}, {36, 36}),
                          "potrf: the matrix: the submatrix 36x36 at 5x5 must lie in the matrix 40x40");
  expect_collective_error(sub({-1, 0}, {}), "the submatrix at -1x0 must start in the matrix 40x40");
  // at + size computed only once `at` is known to lie in the matrix (it overflowed).
  expect_collective_error(sub({INT64_MIN, INT64_MIN}, {}),
                          "the submatrix at -9223372036854775808x-9223372036854775808 must start in the matrix");
  expect_collective_error(sub({0, 0}, {INT64_MAX, INT64_MAX}), "must lie in the matrix 40x40");
  expect_collective_error(sub({0, 0}, {4, 4, 4}), "the submatrix's at and size must have 2 dimensions");
  expect_collective_error(sub({2, 0}, {}), "potrf: the submatrix must be square, got 38x40 at 2x0");
  if (world_size() > 1)
    expect_collective_error(sub({world_rank() == 0 ? 1 : 2, 3}, {30, 30}), "submatrix differs between ranks");
  // Null data on rank 0 only: every rank gets the error, none hangs.
  expect_collective_error(call("40x40 tile=8x8 block_cyclic grid=1x" + p, world_rank() == 0 ? nullptr : buf.data(), o),
                          "passed null data");
  // Different layouts on different ranks.
  if (world_size() > 1)
    expect_collective_error(call("40x40 tile=" + std::string(world_rank() == 0 ? "8x8" : "10x10") +
                                     " block_cyclic grid=1x" + p, buf.data(), o),
                            "layout differs between ranks");
  // Not positive definite: the runtime's error on every rank, the caller's data untouched.
  const redist::Layout user = redist::Layout::parse("77x77 tile=10x10 block_cyclic grid=1x" + p + " storage=local_array");
  std::vector<double> a = make_local(user, [](auto i, auto j) { return i == j && i == 50 ? -1.0 : spd_element(i, j, kN); });
  const std::vector<double> before = a;
  // LAPACK's info for the whole matrix: element (50, 50) makes the leading minor
  // of order 51 the first that is not positive definite, whatever the tiles.
  expect_collective_error([&] { apps::potrf(user, a.data(), MPI_COMM_WORLD, o); },
                          "not positive definite: its leading minor of order 51 is not");
  EXPECT_TRUE(a == before);
  // The same as apps::NotPositiveDefinite, with LAPACK's info, on every rank: on
  // the working layout too (nothing moved), where the failing diagonal tile's
  // owner alone ran the DPOTRF that found it (diagonal tile 3, rows 48-63: rank
  // 1's on 2 ranks).
  for (const bool on_work : {false, true}) {
    const redist::Layout at = on_work ? apps::work_layout(kN, kN, world_size(), o) : user;
    std::vector<double> m = make_local(at, [](auto i, auto j) { return i == j && i == 50 ? -1.0 : spd_element(i, j, kN); });
    std::int64_t order = -1;
    try {
      apps::potrf(at, m.data(), MPI_COMM_WORLD, o);
    } catch (const apps::NotPositiveDefinite& e) {
      order = e.order();
    } catch (const redist::Error&) {
      order = -2;
    }
    EXPECT_EQ(order, 51) << at.spec();
  }
}

// The working copy in huge pages (HugePages::always where the kernel offers them)
// or in base pages: the same bits as the direct run either way, with and without a
// workspace; a workspace's fresh buffer in huge pages starts on a huge page. 1400^2
// doubles: about 5 MB per rank on 3 ranks, two huge pages at least.
TEST_P(Potrf, HugePagesBitIdentical) {
  EXPECT_EQ(apps::Options().huge_pages, apps::HugePages::automatic);
  constexpr int n = 1400;
  apps::Options o = options(GetParam());
  o.tile = 200;
  const std::vector<double> ref = direct(apps::work_layout(n, n, world_size(), o), o.threads);
  const redist::Layout user = redist::Layout::parse("1400x1400 tile=300x300 block_cyclic grid=1x" +
                                                    std::to_string(world_size()) + " storage=local_array");
  for (const apps::HugePages h : {apps::HugePages::always, apps::HugePages::never, apps::HugePages::automatic})
    for (const bool keep : {false, true}) {
      SCOPED_TRACE(static_cast<int>(h) * 2 + keep);
      apps::Workspace ws;
      apps::Options om = o;
      om.huge_pages = h;
      om.workspace = keep ? &ws : nullptr;
      EXPECT_TRUE(all_ranks(potrf_bits_equal(user, n, om, ref)));
    }
  const std::uint64_t huge = apps::detail::huge_page_machine().bytes;
  apps::Workspace ws;
  bool fresh = false;
  const std::size_t unit = huge > 0 ? static_cast<std::size_t>(huge) : std::size_t{2} << 20;
  const std::byte* p = ws.take(0, 3 * unit, fresh, apps::HugePages::always);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(fresh);
  if (huge > 0) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % huge, 0u);
  }
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  // Too small for two huge pages: base pages, 64-byte aligned.
  const std::byte* q = ws.take(1, 100, fresh, apps::HugePages::always);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 64, 0u);
  EXPECT_FALSE(apps::detail::want_huge_pages(apps::HugePages::always, 100));
  EXPECT_FALSE(apps::detail::want_huge_pages(apps::HugePages::never, std::size_t{1} << 30));
  // In base pages, a mapping of its own: page-aligned, writable, freed by size.
  const std::byte* r = ws.take(2, 3 * unit + 5, fresh, apps::HugePages::never);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r) % 4096, 0u);
  std::memset(const_cast<std::byte*>(r), 1, 3 * unit + 5);
  ws.release();
  EXPECT_EQ(ws.bytes(), 0u);
  // An out-of-range value: the same error on every rank.
  apps::Options bad = o;
  bad.huge_pages = static_cast<apps::HugePages>(7);
  std::vector<double> a = make_local(user, [n](auto i, auto j) { return spd_element(i, j, n); });
  expect_collective_error([&] { apps::potrf(user, a.data(), MPI_COMM_WORLD, bad); },
                          "options.huge_pages must be HugePages::automatic, never or always, got 7");
}

// What the machine's files say, parsed from texts of other machines.
TEST(HugePages, MachineFilesParsed) {
  namespace d = apps::detail;
  // This VM's /proc/buddyinfo (1 Dec): free blocks of 2^0 .. 2^10 pages of 4 KiB.
  const std::string buddy =
      "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"
      "Node 0, zone    DMA32      2      3      0      2      3      2      1      4      4      2    752 \n"
      "Node 0, zone   Normal  13553  21790  18495  18261  12116   6002   3092   1297    591    281   1067 \n";
  const std::uint64_t mb = 1 << 20;
  // Blocks of 2 MiB and more: orders 9 (2 MiB) and 10 (4 MiB).
  EXPECT_EQ(d::free_in_blocks(buddy, 4096, 2 * mb), (1 + 2 + 281) * 2 * mb + (3 + 752 + 1067) * 4 * mb);
  EXPECT_EQ(d::free_in_blocks(buddy, 4096, 4 * mb), (3 + 752 + 1067) * 4 * mb);
  EXPECT_EQ(d::free_in_blocks(buddy, 4096, 8 * mb), 0u);
  // 64 KiB base pages (some aarch64 kernels): order 0 is 64 KiB.
  EXPECT_EQ(d::free_in_blocks("Node 0, zone Normal 5 1 2\n", 65536, 131072), (1 * 2 + 2 * 4) * 65536u);
  EXPECT_EQ(d::free_in_blocks("", 4096, 2 * mb), 0u);
  EXPECT_EQ(d::free_in_blocks("garbage without zones\n", 4096, 4096), 0u);
  // A balloon (device 5) reporting free pages (feature bit 5), as on this VM; without
  // the bit; another device with the bit (a network card's bit 5 means something else).
  const std::string features = "0110010100000000000000000000000010000000";
  EXPECT_TRUE(d::balloon_reports("0x0005\n", features));
  EXPECT_FALSE(d::balloon_reports("0x0005\n", "0110000100000000000000000000000010000000"));
  EXPECT_FALSE(d::balloon_reports("0x0001\n", features));
  EXPECT_FALSE(d::balloon_reports("0x0005\n", "01100"));
  EXPECT_FALSE(d::balloon_reports("", ""));
  EXPECT_EQ(d::selected_mode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(d::selected_mode("[always] madvise never\n"), "always");
  EXPECT_EQ(d::selected_mode("always madvise [never]\n"), "never");
  EXPECT_EQ(d::selected_mode(""), "");
}

INSTANTIATE_TEST_SUITE_P(Apps, Potrf, ::testing::Values(1, 2),
                         [](const auto& info) { return std::string(info.param == 1 ? "t1" : "t2"); });
