// Tile QR (apps/qr) and redist::apps::geqrf on 1-3 ranks: a tall (70x50) and a wide
// (37x60) matrix with ragged tiles and an inner blocking that does not divide the
// tile. Checks: the round trip from ScaLAPACK storage (1xP grid), from random owners
// and from the working layout itself is bit for bit the tile QR run directly on the
// working layout; that is bit for bit the same on one rank (a communicator of rank 0
// alone) as on all; and on rank 0, against independent oracles: R^T R = A^T A, |R| =
// |R of LAPACK dgeqrf| (rows may differ in sign), and with Q applied from the
// gathered reflectors and T factors, ||Q^T A - R|| and ||Q^T Q - I|| at LAPACK's level.
#include <lapacke.h>

#include <cmath>
#include <cstring>

#include "apps_util.hpp"
#include "cholesky/cholesky.hpp"
#include "qr/qr.hpp"
#include "redist/apps.hpp"

namespace apps = redist::apps;

class Geqrf : public ::testing::TestWithParam<int> {};

namespace {
// A pseudo-random matrix in [-0.5, 0.5] (not symmetric).
double element(std::int64_t i, std::int64_t j) { return redist::cholesky::spd_element(i + 3 * j + 7, j, 0); }

struct Case {
  int m, n;
};
constexpr Case kCases[] = {{70, 50}, {37, 60}};
constexpr int kTile = 16, kInner = 5;

apps::Options options(int threads) {
  apps::Options o;
  o.tile = kTile;
  o.inner = kInner;
  o.threads = threads;
  return o;
}

// The tile QR run directly on `work` over `comm`; A and T gathered on its rank 0.
std::pair<std::vector<double>, std::vector<double>> direct(const redist::Layout& work, int threads, MPI_Comm comm) {
  rt::LayoutCollection a(work, comm), t(redist::qr::t_layout(work, kInner), comm);
  const redist::LocalIndex& local = a.local();
  for (redist::index_t o = 0; o < local.ntiles(); ++o) {
    const redist::Coord c = local.tile(o);
    const redist::Box b = work.tile_box(c);
    double* p = a.tile<double>(rt::Tile{c[0], c[1]});
    for (redist::index_t j = 0; j < b.size[1]; ++j)
      for (redist::index_t i = 0; i < b.size[0]; ++i) p[i + j * b.size[0]] = element(b.lo[0] + i, b.lo[1] + j);
  }
  rt::TaskGraph g = redist::qr::task_graph(a, t, kInner);
  rt::Options o;
  o.threads = threads;
  rt::run(g, comm, o);
  return {gather_on_root<double>(a, comm), gather_on_root<double>(t, comm)};
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// C (m x ncols, ld m) = Q^T C, Q from the gathered factors F (m x n) and T (ld mt * ib).
void apply_qt(int m, int n, const std::vector<double>& f, const std::vector<double>& t, double* c, int ncols) {
  const int mt = (m + kTile - 1) / kTile, nt = (n + kTile - 1) / kTile, ldt = mt * kInner;
  std::vector<double> work(static_cast<std::size_t>(kInner) * ncols);
  for (int k = 0; k < std::min(mt, nt); ++k) {
    const int mk = std::min(kTile, m - k * kTile), nk = std::min(kTile, n - k * kTile), kb = std::min(mk, nk);
    const double* tk = &t[k * kInner + static_cast<std::size_t>(k) * kTile * ldt];
    ASSERT_EQ(LAPACKE_dgemqrt_work(LAPACK_COL_MAJOR, 'L', 'T', mk, ncols, kb, std::min(kInner, kb),
                                   &f[k * kTile + static_cast<std::size_t>(k) * kTile * m], m, tk, ldt, c + k * kTile,
                                   m, work.data()),
              0);
    for (int i = k + 1; i < mt; ++i) {
      const int mi = std::min(kTile, m - i * kTile);
      ASSERT_EQ(LAPACKE_dtpmqrt_work(LAPACK_COL_MAJOR, 'L', 'T', mi, ncols, nk, 0, std::min(kInner, nk),
                                     &f[i * kTile + static_cast<std::size_t>(k) * kTile * m], m,
                                     &t[i * kInner + static_cast<std::size_t>(k) * kTile * ldt], ldt, c + k * kTile,
                                     m, c + i * kTile, m, work.data()),
                0);
    }
  }
}

// The oracles on rank 0 for the factors F, T of the m x n matrix.
void check_against_lapack(int m, int n, const std::vector<double>& f, const std::vector<double>& t) {
  std::vector<double> a(static_cast<std::size_t>(m) * n), r(a.size(), 0.0), lap(a.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      a[i + j * m] = lap[i + j * m] = element(i, j);
      if (i <= j) r[i + j * m] = f[i + j * m];
    }
  const double anorm = max_abs(a), rnorm = max_abs(r), eps = 1e-14 * std::max(m, n);
  // R^T R = A^T A, independent of Q.
  double gram = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double ata = 0, rtr = 0;
      for (int k = 0; k < m; ++k) ata += a[k + i * m] * a[k + j * m];
      for (int k = 0; k < std::min(m, n); ++k) rtr += r[k + i * m] * r[k + j * m];
      gram = std::max(gram, std::abs(ata - rtr));
    }
  EXPECT_LT(gram / (anorm * anorm * m), eps) << "R^T R != A^T A";
  // |R| = |R of dgeqrf|.
  std::vector<double> tau(static_cast<std::size_t>(n) + 1);
  ASSERT_EQ(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, lap.data(), m, tau.data()), 0);
  double diff = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= std::min(j, m - 1); ++i)
      diff = std::max(diff, std::abs(std::abs(r[i + j * m]) - std::abs(lap[i + j * m])));
  EXPECT_LT(diff / rnorm, 1e-12) << "|R| differs from LAPACK dgeqrf's";
  // Q^T A = R (zero below), Q^T Q = I.
  std::vector<double> qta = a;
  apply_qt(m, n, f, t, qta.data(), n);
  double res = 0;
  for (std::size_t e = 0; e < qta.size(); ++e) res = std::max(res, std::abs(qta[e] - r[e]));
  EXPECT_LT(res / anorm, eps) << "||Q^T A - R||";
  std::vector<double> qt(static_cast<std::size_t>(m) * m, 0.0);
  for (int i = 0; i < m; ++i) qt[i + i * m] = 1.0;
  apply_qt(m, n, f, t, qt.data(), m);  // Q^T
  double orth = 0;
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;  // (Q^T Q)(i, j) = row i of Q^T . row j of Q^T
      for (int k = 0; k < m; ++k) s += qt[i + k * m] * qt[j + k * m];
      orth = std::max(orth, std::abs(s - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_LT(orth, eps) << "||Q^T Q - I||";
}
}  // namespace

TEST_P(Geqrf, RoundTripBitIdenticalAndMatchesLapack) {
  apps::Options o = options(GetParam());
  const std::string p = std::to_string(world_size());
  // The default grid (1xP here) keeps each tile row's chain on one rank; on Px1 the
  // rows of step k travel down their column and come back through STORE.
  for (redist::Coord grid : {redist::Coord{}, redist::Coord{world_size(), 1}})
  for (const Case& cs : kCases) {
    o.grid = grid;
    const std::string shape = std::to_string(cs.m) + "x" + std::to_string(cs.n);
    SCOPED_TRACE(shape + (grid.ndim() ? " on Px1" : " on the default grid"));
    const redist::Layout work = apps::qr_work_layout(cs.m, cs.n, world_size(), o);
    const auto [ref, ref_t] = direct(work, o.threads, MPI_COMM_WORLD);
    // The same on one rank: a communicator of rank 0 alone, grid 1x1, same tiles.
    MPI_Comm self;
    ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, world_rank() == 0 ? 0 : MPI_UNDEFINED, 0, &self), MPI_SUCCESS);
    if (world_rank() == 0) {
      apps::Options one_rank = o;
      one_rank.grid = {};
      const auto [one, one_t] = direct(apps::work_layout(cs.m, cs.n, 1, one_rank), o.threads, self);
      EXPECT_EQ(std::memcmp(one.data(), ref.data(), ref.size() * sizeof(double)), 0) << "1 rank vs " << p;
      MPI_Comm_free(&self);
    }
    const std::vector<redist::Layout> users = {
        redist::Layout::parse(shape + " tile=10x10 block_cyclic grid=1x" + p + " storage=local_array"),
        redist::Layout::parse(shape + " tile=7x9 random seed=11 ranks=" + p), work};
    for (const redist::Layout& user : users) {
      SCOPED_TRACE(user.spec());
      std::vector<double> a = make_local(user, element);
      const apps::QrFactors f = apps::geqrf(user, a.data(), MPI_COMM_WORLD, o);
      EXPECT_EQ(f.report.moved, !(user == work));
      EXPECT_EQ(f.inner, kInner);
      EXPECT_EQ(f.report.work, work.spec());
      const std::vector<double> got = gather_root(user, a.data());
      const std::vector<double> got_t = gather_on_root<double>(*f.t);
      bool same = true;
      if (world_rank() == 0) {
        same = std::memcmp(got.data(), ref.data(), ref.size() * sizeof(double)) == 0 &&
               std::memcmp(got_t.data(), ref_t.data(), ref_t.size() * sizeof(double)) == 0;
        EXPECT_TRUE(same) << "the round trip differs from the tile QR on " << work.spec();
      }
      ASSERT_TRUE(all_ranks(same));
    }
    if (world_rank() == 0) check_against_lapack(cs.m, cs.n, ref, ref_t);
  }
}

// A submatrix (pdgeqrf's A(IA, JA)) of a larger matrix, in ScaLAPACK storage across
// tile boundaries and with random owners: A and T bit for bit those of the tile QR
// of the same matrix run directly on the working layout, and every element outside
// the submatrix left as it was.
TEST_P(Geqrf, SubmatrixBitIdenticalAndTheRestUntouched) {
  const apps::Options o = options(GetParam());
  const std::string p = std::to_string(world_size());
  const Case cs = kCases[0];
  const redist::Layout work = apps::qr_work_layout(cs.m, cs.n, world_size(), o);
  const auto [ref, ref_t] = direct(work, o.threads, MPI_COMM_WORLD);
  const auto outside = [](redist::index_t i, redist::index_t j) { return -1.0 - static_cast<double>(i + 1000 * j); };
  const std::vector<std::pair<redist::Layout, redist::Coord>> cases = {
      {redist::Layout::parse("90x75 tile=10x10 block_cyclic grid=1x" + p + " storage=local_array"), {11, 20}},
      {redist::Layout::parse("77x53 tile=7x9 random seed=11 ranks=" + p), {7, 3}}};
  for (const auto& [user, at] : cases) {
    SCOPED_TRACE(user.spec() + " at " + at.str());
    const auto inside = [&, at = at](redist::index_t i, redist::index_t j) {
      return i >= at[0] && i < at[0] + cs.m && j >= at[1] && j < at[1] + cs.n;
    };
    std::vector<double> a = make_local(user, [&, at = at](auto i, auto j) {
      return inside(i, j) ? element(i - at[0], j - at[1]) : outside(i, j);
    });
    const apps::QrFactors f = apps::geqrf(user, a.data(), apps::Submatrix{at, {cs.m, cs.n}}, MPI_COMM_WORLD, o);
    EXPECT_TRUE(f.report.moved);
    EXPECT_EQ(f.report.work, work.spec());
    const std::vector<double> got = gather_root(user, a.data());
    const std::vector<double> got_t = gather_on_root<double>(*f.t);
    bool same = true;
    if (world_rank() == 0) {
      const redist::index_t rows = user.shape()[0];
      for (redist::index_t j = 0; j < user.shape()[1]; ++j)
        for (redist::index_t i = 0; i < rows; ++i) {
          const double want =
              inside(i, j) ? ref[static_cast<std::size_t>(i - at[0] + (j - at[1]) * cs.m)] : outside(i, j);
          same = same && std::memcmp(&got[static_cast<std::size_t>(i + j * rows)], &want, sizeof(double)) == 0;
        }
      same = same && std::memcmp(got_t.data(), ref_t.data(), ref_t.size() * sizeof(double)) == 0;
      EXPECT_TRUE(same) << "the submatrix's QR differs from the tile QR on " << work.spec()
                        << ", or an element outside it changed";
    }
    ASSERT_TRUE(all_ranks(same));
  }
  // Empty submatrices (no rows, no columns): nothing read or written.
  for (const redist::Coord& size : {redist::Coord{0, 5}, redist::Coord{5, 0}}) {
    const redist::Layout& user = cases[0].first;
    std::vector<double> a = make_local(user, outside);
    const std::vector<double> before = a;
    apps::geqrf(user, a.data(), apps::Submatrix{{3, 4}, size}, MPI_COMM_WORLD, o);
    EXPECT_TRUE(a == before) << size.str();
  }
}

namespace {

// A and T of `f` (A in `data`, laid out as `l`), gathered on rank 0: true there
// when both are bit for bit `ref` and `ref_t` (true on the other ranks).
bool same_factors(const redist::Layout& l, const double* data, const apps::QrFactors& f,
                  const std::vector<double>& ref, const std::vector<double>& ref_t) {
  const std::vector<double> got = gather_root(l, data);
  const std::vector<double> got_t = gather_on_root<double>(*f.t);
  return world_rank() != 0 || (std::memcmp(got.data(), ref.data(), ref.size() * sizeof(double)) == 0 &&
                               std::memcmp(got_t.data(), ref_t.data(), ref_t.size() * sizeof(double)) == 0);
}

}  // namespace

// The caller's matrix already in the working layout and in shared windows (tiles of
// 48 x 48 doubles, above the eager limit), on the default grid and on Px1 (where
// tile rows travel down their column), nodes whole, of 1 and of 2 ranks: the same
// bits (A and T) as the tile QR on the heap, with reads in place on and off, and
// with tasks lent across the ranks of a node (apps::Options::lend).
TEST_P(Geqrf, SharedStorageBitIdentical) {
  apps::Options o = options(GetParam());
  o.tile = 48;
  for (redist::Coord grid : {redist::Coord{}, redist::Coord{world_size(), 1}}) {
    o.grid = grid;
    const redist::Layout work = apps::qr_work_layout(150, 100, world_size(), o);
    SCOPED_TRACE(work.spec());
    const auto [ref, ref_t] = direct(work, o.threads, MPI_COMM_WORLD);
    for (int node : {0, 1, 2})
      for (int mode : {0, 1, 2}) {  // in place; not; in place and lending
        const bool in_place = mode != 1;
        SCOPED_TRACE("node size " + std::to_string(node) + (in_place ? ", in place" : ", off") +
                     (mode == 2 ? ", lend" : ""));
        apps::Options om = o;
        om.read_in_place = in_place;
        om.lend = mode == 2;
        SharedCopy a(make_local(work, element), node);
        const apps::QrFactors f = apps::geqrf(work, a.data(), MPI_COMM_WORLD, om);
        EXPECT_FALSE(f.report.moved);
        EXPECT_TRUE(all_ranks(same_factors(work, a.data(), f, ref, ref_t)));
      }
  }
}

// apps::Options::shared_work: a heap matrix in ScaLAPACK storage moved into a
// working copy in shared windows (tasks reading the other ranks' tiles in place):
// A and T bit for bit the tile QR's.
TEST_P(Geqrf, SharedWorkCopyBitIdentical) {
  apps::Options o = options(GetParam());
  const std::string p = std::to_string(world_size());
  const Case& cs = kCases[0];
  const std::string shape = std::to_string(cs.m) + "x" + std::to_string(cs.n);
  const redist::Layout work = apps::qr_work_layout(cs.m, cs.n, world_size(), o);
  const auto [ref, ref_t] = direct(work, o.threads, MPI_COMM_WORLD);
  const redist::Layout user = redist::Layout::parse(shape + " tile=10x10 block_cyclic grid=1x" + p + " storage=local_array");
  for (bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "in place" : "not in place");
    apps::Options om = o;
    om.shared_work = true;
    om.read_in_place = in_place;
    std::vector<double> a = make_local(user, element);
    const apps::QrFactors f = apps::geqrf(user, a.data(), MPI_COMM_WORLD, om);
    EXPECT_TRUE(f.report.moved);
    EXPECT_TRUE(all_ranks(same_factors(user, a.data(), f, ref, ref_t)));
  }
}

// qr::column_owners: every column on a rank of [0, ranks), the list schedule no
// longer than block-cyclic columns', and shorter where those leave a rank idle (9
// columns on 2 ranks, N = 2000 with tiles of 224, the case measured in
// docs/apps.md; and its small image here); the same answer twice; j mod ranks on
// one rank and where the columns are many.
TEST(QrOwners, ShorterSchedulesThanCyclicColumns) {
  struct Shape {
    redist::index_t m, n, tile;
    int ranks;
  };
  for (const Shape& sh : {Shape{2000, 2000, 224, 2}, Shape{90, 90, 10, 2}, Shape{2000, 2000, 288, 2},
                          Shape{4000, 4000, 480, 2}, Shape{1000, 1000, 96, 3}, Shape{3000, 1000, 200, 2},
                          Shape{700, 1300, 100, 2}, Shape{500, 500, 100, 1}, Shape{12000, 12000, 128, 2}}) {
    const redist::Layout l = redist::block_cyclic_layout({sh.m, sh.n}, {sh.tile, sh.tile}, {1, sh.ranks});
    SCOPED_TRACE(l.spec());
    const std::vector<int> own = redist::qr::column_owners(l, sh.ranks);
    ASSERT_EQ(static_cast<redist::index_t>(own.size()), l.ntiles()[1]);
    std::vector<int> cyclic(own.size());
    for (size_t j = 0; j < own.size(); ++j) {
      EXPECT_TRUE(own[j] >= 0 && own[j] < sh.ranks) << own[j];
      cyclic[j] = static_cast<int>(j % static_cast<size_t>(sh.ranks));
    }
    EXPECT_EQ(redist::qr::column_owners(l, sh.ranks), own);
    if (sh.ranks == 1 || sh.tile == 128) {  // one rank; 94 columns: j mod ranks
      EXPECT_EQ(own, cyclic);
      continue;
    }
    const double chosen = redist::qr::schedule_length(l, own, sh.ranks),
                 base = redist::qr::schedule_length(l, cyclic, sh.ranks);
    EXPECT_LE(chosen, base);
    if (sh.tile == 224 || sh.tile == 10) {
      EXPECT_LT(chosen, 0.97 * base);
    }
  }
  const redist::Layout l = redist::block_cyclic_layout({20, 20}, {5, 5}, {1, 2});
  EXPECT_THROW(redist::qr::schedule_length(l, {0, 1, 2, 0}, 2), redist::Error);
  EXPECT_THROW(redist::qr::schedule_length(l, {0, 1}, 2), redist::Error);
  EXPECT_THROW(redist::qr::column_owners(l, 0), redist::Error);
}

// The QR on owners qr_work_layout chose (a `table` on 2 ranks) is bit for bit the
// QR on block-cyclic owners of the same tiles (an explicit grid): owners change
// where tasks run, not what they compute.
TEST_P(Geqrf, ChosenColumnOwnersComputeTheSameBits) {
  apps::Options o = options(GetParam());
  o.tile = 10;
  const redist::Layout work = apps::qr_work_layout(90, 90, world_size(), o);
  if (world_size() == 2) {
    EXPECT_EQ(work.ownership().kind(), redist::Ownership::Kind::table) << work.spec();
  }
  apps::Options cyclic_options = o;
  cyclic_options.grid = {1, world_size()};  // an explicit grid: block-cyclic
  const redist::Layout cyclic = apps::qr_work_layout(90, 90, world_size(), cyclic_options);
  EXPECT_EQ(cyclic.spec(), apps::work_layout(90, 90, world_size(), cyclic_options).spec());
  const auto [ref, ref_t] = direct(cyclic, o.threads, MPI_COMM_WORLD);
  const redist::Layout user = redist::Layout::parse("90x90 tile=32x32 block_cyclic grid=1x" +
                                                    std::to_string(world_size()) + " storage=local_array");
  std::vector<double> a = make_local(user, element);
  const apps::QrFactors f = apps::geqrf(user, a.data(), MPI_COMM_WORLD, o);
  EXPECT_EQ(f.report.work, work.spec());
  EXPECT_TRUE(all_ranks(same_factors(user, a.data(), f, ref, ref_t)));
}

TEST_P(Geqrf, BadInputIsACollectiveError) {
  const std::string p = std::to_string(world_size());
  apps::Options o = options(GetParam());
  std::vector<double> buf(64 * 64, 1.0);
  expect_collective_error([&] { apps::geqrf(redist::Layout::parse("40 tile=8"), buf.data(), MPI_COMM_WORLD, o); },
                          "geqrf: the matrix must be a 2-D layout");
  o.inner = -1;
  expect_collective_error(
      [&] { apps::geqrf(redist::Layout::parse("40x40 tile=8x8 block_cyclic grid=1x" + p), buf.data(), MPI_COMM_WORLD, o); },
      "options.inner must be >= 0");
  // The task graph's own checks: tall diagonal tiles above the last tile row.
  rt::LayoutCollection a(redist::Layout::parse("40x40 tile=8x10"), MPI_COMM_WORLD);
  rt::LayoutCollection t(redist::qr::t_layout(a.layout(), 4), MPI_COMM_WORLD);
  EXPECT_THROW(redist::qr::task_graph(a, t, 4), redist::Error);
  EXPECT_THROW(redist::qr::task_graph(a, t, 3), redist::Error);  // T on another inner blocking
}

INSTANTIATE_TEST_SUITE_P(Apps, Geqrf, ::testing::Values(1, 2),
                         [](const auto& info) { return std::string(info.param == 1 ? "t1" : "t2"); });
