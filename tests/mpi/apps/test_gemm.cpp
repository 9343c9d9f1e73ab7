// Tiled GEMM (apps/gemm) and redist::apps::gemm on 1-3 ranks: C (45x29) = 1.5 A
// (45x37) B (37x29) - 0.5 C, tiles of 8 (ragged), from ScaLAPACK storage on a 1xP
// grid, from random owners, and from the working layouts: bit for bit the tiled
// GEMM run directly on the working layouts, A and B unchanged, and against cblas_dgemm
// on rank 0 (rel. 1e-13). beta = 0 ignores C (NaN in the caller's C or in the
// working copy's memory stays out of the result).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "apps_util.hpp"
#include "cholesky/cholesky.hpp"
#include "gemm/gemm.hpp"
#include "redist/apps.hpp"

namespace apps = redist::apps;

class Gemm : public ::testing::TestWithParam<int> {};

namespace {
constexpr int kM = 45, kK = 37, kN = 29;
double ea(std::int64_t i, std::int64_t j) { return redist::cholesky::spd_element(i + 3 * j + 7, j, 0); }
double eb(std::int64_t i, std::int64_t j) { return redist::cholesky::spd_element(i + 5 * j + 11, j + 1, 0); }
double ec(std::int64_t i, std::int64_t j) { return redist::cholesky::spd_element(i + 2 * j + 3, j, 0); }
// C of the no-product test: exact small values, NaN at (2, 3).
double beta_zero_nan(std::int64_t i, std::int64_t j) {
  return i == 2 && j == 3 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(i + 10 * j + 1);
}

template <class F>
void fill(const rt::LayoutCollection& x, F f);

// C = 1.5 A B - 0.5 C by the tiled GEMM run directly on the working layouts, C
// gathered on rank 0 (the reference of the round trips).
std::vector<double> direct_product(const redist::Layout& wa, const redist::Layout& wb, const redist::Layout& wc,
                                   int threads) {
  rt::LayoutCollection A(wa, MPI_COMM_WORLD), B(wb, MPI_COMM_WORLD), C(wc, MPI_COMM_WORLD);
  fill(A, ea), fill(B, eb), fill(C, ec);
  rt::TaskGraph g = redist::gemm::task_graph(1.5, A, B, -0.5, C);
  rt::Options ro;
  ro.threads = threads;
  rt::run(g, MPI_COMM_WORLD, ro);
  return gather_on_root<double>(C);
}

template <class F>
void fill(const rt::LayoutCollection& x, F f) {
  for (redist::index_t o = 0; o < x.local().ntiles(); ++o) {
    const redist::Coord c = x.local().tile(o);
    const redist::Box b = x.layout().tile_box(c);
    double* p = x.tile<double>(rt::Tile{c[0], c[1]});
    for (redist::index_t j = 0; j < b.size[1]; ++j)
      for (redist::index_t i = 0; i < b.size[0]; ++i) p[i + j * b.size[0]] = f(b.lo[0] + i, b.lo[1] + j);
  }
}
}  // namespace

TEST_P(Gemm, RoundTripBitIdenticalAndMatchesBlas) {
  apps::Options o;
  o.tile = 8;
  o.threads = GetParam();
  const int P = world_size();
  const std::string p = std::to_string(P);
  const redist::Layout wa = apps::work_layout(kM, kK, P, o), wb = apps::work_layout(kK, kN, P, o),
                       wc = apps::work_layout(kM, kN, P, o);
  const std::vector<double> ref = direct_product(wa, wb, wc, o.threads);

  auto sl = [&](int r, int c, const char* tile) {
    return redist::Layout::parse(std::to_string(r) + "x" + std::to_string(c) + " tile=" + tile +
                                 " block_cyclic grid=1x" + p + " storage=local_array");
  };
  auto rnd = [&](int r, int c, int seed) {
    return redist::Layout::parse(std::to_string(r) + "x" + std::to_string(c) + " tile=6x7 random seed=" +
                                 std::to_string(seed) + " ranks=" + p);
  };
  struct Users {
    redist::Layout a, b, c;
  };
  // Every element of each working tile in one caller tile's rank (element by element).
  auto on_one_rank = [](const redist::Layout& user, const redist::Layout& work) {
    for (redist::index_t t = 0; t < work.ntiles().volume(); ++t) {
      const redist::Coord wt{t % work.ntiles()[0], t / work.ntiles()[0]};
      const redist::Box b = work.tile_box(wt);
      auto owner = [&](redist::index_t i, redist::index_t j) {
        return user.owner(redist::Coord{user.partition(0).tile_of(i), user.partition(1).tile_of(j)});
      };
      for (redist::index_t j = b.lo[1]; j < b.lo[1] + b.size[1]; ++j)
        for (redist::index_t i = b.lo[0]; i < b.lo[0] + b.size[0]; ++i)
          if (owner(i, j) != owner(b.lo[0], b.lo[1])) return false;
    }
    return true;
  };
  apps::Workspace ws;
  // ScaLAPACK tiles that are multiples of the working tile (8): A and B packed by READ
  // tasks on the ranks that hold them on any rank count; the others on one rank only.
  for (const Users& u : {Users{sl(kM, kK, "10x10"), sl(kK, kN, "12x9"), sl(kM, kN, "10x9")},
                         Users{sl(kM, kK, "16x16"), sl(kK, kN, "8x24"), sl(kM, kN, "16x8")},
                         Users{rnd(kM, kK, 1), rnd(kK, kN, 2), rnd(kM, kN, 3)}, Users{wa, wb, wc}})
    // Fresh working memory, then a Workspace kept across the calls (even ranks only).
    for (apps::Workspace* w : {static_cast<apps::Workspace*>(nullptr), world_rank() % 2 == 0 ? &ws : nullptr}) {
      SCOPED_TRACE(u.c.spec() + (w ? " with a workspace" : ""));
      const std::vector<double> a = make_local(u.a, ea), b = make_local(u.b, eb);
      std::vector<double> c = make_local(u.c, ec);
      apps::Options ow = o;
      ow.workspace = w;
      const apps::Report r =
          apps::gemm(1.5, u.a, a.data(), u.b, b.data(), -0.5, u.c, c.data(), MPI_COMM_WORLD, ow);
      EXPECT_EQ(r.moved, !(u.c == wc));
      EXPECT_EQ(r.packed, !(u.a == wa) && !(u.b == wb) && (P == 1 || (on_one_rank(u.a, wa) && on_one_rank(u.b, wb))));
      if (P > 1 && u.a.partition(0).tile() == 16) {
        EXPECT_TRUE(r.packed);  // the case that tests the ranks
      }
      EXPECT_TRUE(a == make_local(u.a, ea) && b == make_local(u.b, eb)) << "A and B must not change";
      const std::vector<double> got = gather_root(u.c, c.data());
      bool same = true;
      if (world_rank() == 0) same = std::memcmp(got.data(), ref.data(), ref.size() * sizeof(double)) == 0;
      EXPECT_TRUE(same) << "the round trip differs from the tiled GEMM on the working layouts";
      ASSERT_TRUE(all_ranks(same));
    }
  if (world_rank() == 0) {  // the independent oracle: one cblas_dgemm
    std::vector<double> a(kM * kK), b(kK * kN), c(kM * kN);
    for (int j = 0; j < kK; ++j)
      for (int i = 0; i < kM; ++i) a[i + j * kM] = ea(i, j);
    for (int j = 0; j < kN; ++j)
      for (int i = 0; i < kK; ++i) b[i + j * kK] = eb(i, j);
    for (int j = 0; j < kN; ++j)
      for (int i = 0; i < kM; ++i) c[i + j * kM] = ec(i, j);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, kM, kN, kK, 1.5, a.data(), kM, b.data(), kK, -0.5,
                c.data(), kM);
    double diff = 0, norm = 0;
    for (std::size_t e = 0; e < c.size(); ++e) {
      diff = std::max(diff, std::abs(ref[e] - c[e]));
      norm = std::max(norm, std::abs(c[e]));
    }
    EXPECT_LT(diff / norm, 1e-13);
  }
}

// A, B and C as disjoint submatrices of one caller's matrix (pdgemm's A(IA, JA),
// B(IB, JB), C(IC, JC) on one descriptor): A at (0, 0), C beside it at (0, 37), B
// below both at (45, 0) of an 82 x 66 matrix, in ScaLAPACK storage whose tiles are
// multiples of the working tile (A and B packed by READ tasks), whose tiles are not
// (moved in), and with random owners. C's submatrix comes out bit for bit as the
// tiled GEMM run directly on the working layouts, and every other element of the
// matrix (A, B, the rest) is left as it was. With alpha = 0 only C's submatrix is
// scaled; a C that overlaps A in the same matrix is refused.
TEST_P(Gemm, SubmatricesOfOneMatrix) {
  apps::Options o;
  o.tile = 8;
  o.threads = GetParam();
  const int P = world_size();
  const std::string p = std::to_string(P);
  const redist::Layout wa = apps::work_layout(kM, kK, P, o), wb = apps::work_layout(kK, kN, P, o),
                       wc = apps::work_layout(kM, kN, P, o);
  const std::vector<double> ref = direct_product(wa, wb, wc, o.threads);

  const redist::Coord at_a{0, 0}, at_b{kM, 0}, at_c{0, kK};
  constexpr int kRows = kM + kK, kCols = kK + kN;
  const auto in = [](const redist::Coord& at, int m, int n, redist::index_t i, redist::index_t j) {
    return i >= at[0] && i < at[0] + m && j >= at[1] && j < at[1] + n;
  };
  const auto element = [&](redist::index_t i, redist::index_t j) {
    if (in(at_a, kM, kK, i, j)) return ea(i - at_a[0], j - at_a[1]);
    if (in(at_b, kK, kN, i, j)) return eb(i - at_b[0], j - at_b[1]);
    if (in(at_c, kM, kN, i, j)) return ec(i - at_c[0], j - at_c[1]);
    return -1.0 - static_cast<double>(i + 1000 * j);
  };
  const std::string shape = std::to_string(kRows) + "x" + std::to_string(kCols);
  for (const std::string& tail : {" tile=16x16 block_cyclic grid=1x" + p + " storage=local_array",
                                 " tile=10x10 block_cyclic grid=1x" + p + " storage=local_array",
                                 " tile=6x7 random seed=4 ranks=" + p}) {
    const redist::Layout user = redist::Layout::parse(shape + tail);
    SCOPED_TRACE(user.spec());
    std::vector<double> m = make_local(user, element);
    const apps::Report r = apps::gemm(1.5, user, m.data(), {at_a, {kM, kK}}, user, m.data(), {at_b, {kK, kN}}, -0.5,
                                      user, m.data(), {at_c, {kM, kN}}, MPI_COMM_WORLD, o);
    EXPECT_TRUE(r.moved);
    if (user.partition(0).tile() == 16) {
      EXPECT_TRUE(r.packed);  // every working tile of A and B on one rank of the caller's
    }
    const std::vector<double> got = gather_root(user, m.data());
    bool same = true;
    if (world_rank() == 0)
      for (redist::index_t j = 0; j < kCols; ++j)
        for (redist::index_t i = 0; i < kRows; ++i) {
          const double want = in(at_c, kM, kN, i, j)
                                  ? ref[static_cast<std::size_t>(i - at_c[0] + (j - at_c[1]) * kM)]
                                  : element(i, j);
          same = same && std::memcmp(&got[static_cast<std::size_t>(i + j * kRows)], &want, sizeof(double)) == 0;
        }
    EXPECT_TRUE(same) << "C's submatrix differs from the tiled GEMM, or an element outside it changed";
    ASSERT_TRUE(all_ranks(same));
    // alpha = 0: C(sub) := -0.5 C(sub), nothing else touched.
    std::vector<double> z = make_local(user, element);
    apps::gemm(0.0, user, z.data(), {at_a, {kM, kK}}, user, z.data(), {at_b, {kK, kN}}, -0.5, user, z.data(),
               {at_c, {kM, kN}}, MPI_COMM_WORLD, o);
    const std::vector<double> scaled = gather_root(user, z.data());
    same = true;
    if (world_rank() == 0)
      for (redist::index_t j = 0; j < kCols; ++j)
        for (redist::index_t i = 0; i < kRows; ++i)
          same = same && scaled[static_cast<std::size_t>(i + j * kRows)] ==
                             (in(at_c, kM, kN, i, j) ? -0.5 * element(i, j) : element(i, j));
    EXPECT_TRUE(same) << "alpha = 0 must scale C's submatrix alone";
    ASSERT_TRUE(all_ranks(same));
  }
  const redist::Layout user = redist::Layout::parse(shape + " tile=10x10 block_cyclic grid=1x" + p);
  std::vector<double> m = make_local(user, element);
  // m = 0 or n = 0: an empty C, nothing read or written (BLAS's quick return).
  for (const auto& [am, bn] : {std::pair{0, kN}, std::pair{kM, 0}}) {
    const std::vector<double> before = m;
    apps::gemm(1.5, user, m.data(), {at_a, {am, kK}}, user, m.data(), {at_b, {kK, bn}}, -0.5, user, m.data(),
               {at_c, {am, bn}}, MPI_COMM_WORLD, o);
    EXPECT_TRUE(m == before) << am << "x" << bn;
  }
  expect_collective_error(
      [&] {
        apps::gemm(1.0, user, m.data(), {at_a, {kM, kK}}, user, m.data(), {at_b, {kK, kN}}, 0.0, user, m.data(),
                   {{0, kK - 1}, {kM, kN}}, MPI_COMM_WORLD, o);
      },
      "gemm: C's submatrix 45x29 at 0x36 overlaps A's 45x37 at 0x0 in the same matrix");
  expect_collective_error(
      [&] {
        apps::gemm(1.0, user, m.data(), {at_a, {kM, kK}}, user, m.data(), {at_b, {kK, kN + 1}}, 0.0, user, m.data(),
                   {at_c, {kM, kN}}, MPI_COMM_WORLD, o);
      },
      "gemm: the shapes must be A m x k, B k x n, C m x n; got A 45x37 at 0x0 of '");
}

TEST_P(Gemm, BetaZeroIgnoresCAndBadShapesAreRejected) {
  apps::Options o;
  o.tile = 8;
  o.threads = GetParam();
  const std::string p = std::to_string(world_size());
  const redist::Layout la = redist::Layout::parse("20x10 tile=5x5 block_cyclic grid=1x" + p + " storage=local_array");
  const redist::Layout lb = redist::Layout::parse("10x12 tile=5x5 block_cyclic grid=1x" + p + " storage=local_array");
  const redist::Layout lc = redist::Layout::parse("20x12 tile=5x5 block_cyclic grid=1x" + p + " storage=local_array");
  const std::vector<double> a = make_local(la, ea), b = make_local(lb, eb);
  // Three times with one workspace: the second call's C buffer holds the first one's
  // product, the third's is NaN (the working C is neither moved in nor zeroed when
  // beta = 0: GEMM(m, n, 0) must write it without reading it).
  apps::Workspace ws;
  o.workspace = &ws;
  for (int call = 0; call < 3; ++call) {
    if (call == 2) {
      const redist::Layout wc = apps::work_layout(20, 12, world_size(), o);
      const auto elements = static_cast<std::size_t>(redist::LocalIndex(wc, world_rank()).elements());
      bool fresh = false;
      double* w = reinterpret_cast<double*>(ws.take(2, elements * sizeof(double), fresh));
      ASSERT_FALSE(fresh) << "the workspace should hold the working C of the calls before";
      std::fill(w, w + elements, std::numeric_limits<double>::quiet_NaN());
    }
    std::vector<double> c = make_local(lc, [](auto, auto) { return std::numeric_limits<double>::quiet_NaN(); });
    apps::gemm(1.0, la, a.data(), lb, b.data(), 0.0, lc, c.data(), MPI_COMM_WORLD, o);
    const std::vector<double> got = gather_root(lc, c.data());
    if (world_rank() == 0)
      for (int j = 0; j < 12; ++j)
        for (int i = 0; i < 20; ++i) {
          double s = 0;
          for (int k = 0; k < 10; ++k) s += ea(i, k) * eb(k, j);
          ASSERT_NEAR(got[i + j * 20], s, 1e-13) << "call " << call << ": " << i << "," << j;
        }
  }
  std::vector<double> c = make_local(lc, [](auto, auto) { return 0.0; });
  expect_collective_error([&] { apps::gemm(1.0, la, a.data(), la, a.data(), 0.0, lc, c.data(), MPI_COMM_WORLD, o); },
                          "gemm: the shapes must be A m x k, B k x n, C m x n");
  // alpha = 0 on rank 0 only: rank 0 would take the quick return, the others the
  // round trip (a hang); the scalars are agreed first.
  if (world_size() > 1)
    expect_collective_error(
        [&] {
          apps::gemm(world_rank() == 0 ? 0.0 : 1.0, la, a.data(), lb, b.data(), 0.0, lc, c.data(), MPI_COMM_WORLD, o);
        },
        "alpha and beta differ between ranks");
  // C over A's storage (BLAS forbids it): where the caller's layout was the
  // working one the product was computed in place and came out wrong, silently.
  expect_collective_error([&] { apps::gemm(1.0, la, c.data(), lb, b.data(), 0.0, lc, c.data(), MPI_COMM_WORLD, o); },
                          "gemm: C and A share storage on rank 0: C must not overlap A or B");
  // An ld= below the local rows on one rank only (each rank passes its own, as
  // ScaLAPACK's LLD): every rank's error, named for the matrix. It was rank 0's
  // alone, on the packing path (ScaLAPACK tiles a multiple of the working tile)
  // and where alpha = 0, and the others waited forever.
  if (world_size() > 1) {
    const redist::Layout wide = redist::Layout::parse("20x10 tile=8x8 block_cyclic grid=1x" + p + " storage=local_array");
    const std::vector<double> w = make_local(wide, ea);
    const redist::Layout short_ld =
        world_rank() == 0 ? redist::Layout::parse("20x10 tile=8x8 block_cyclic grid=1x" + p + " storage=local_array ld=19")
                          : wide;
    for (const double alpha : {1.0, 0.0})
      expect_collective_error(
          [&] { apps::gemm(alpha, short_ld, w.data(), lb, b.data(), 1.0, lc, c.data(), MPI_COMM_WORLD, o); },
          "gemm: A: storage=local_array ld=19 is smaller than the 20 local rows of rank 0");
  }
}

// No product to add (k = 0, or alpha = 0): BLAS's C := beta C, against the
// caller's C (beta = -0.5, every element exactly), 0 where beta = 0 even over NaN
// (C written, not read), unchanged with beta = 1; in ScaLAPACK storage with a
// leading dimension larger than the rows (the padding untouched) and in tile
// storage. k = 0 left C unchanged (no GEMM task applied beta), and with beta = 0
// wrote the working copy's uninitialized memory back.
TEST_P(Gemm, NoProductScalesC) {
  apps::Options o;
  o.tile = 4;
  o.threads = GetParam();
  const std::string p = std::to_string(world_size());
  for (const std::string storage : {"storage=local_array ld=9", "storage=tile"}) {
    for (const auto& [k, alpha] : std::vector<std::pair<int, double>>{{0, 1.5}, {5, 0.0}}) {
      const redist::Layout la = redist::Layout::parse("7x" + std::to_string(k) + " tile=3x3 block_cyclic grid=1x" + p);
      const redist::Layout lb = redist::Layout::parse(std::to_string(k) + "x6 tile=3x3 block_cyclic grid=1x" + p);
      const redist::Layout lc = redist::Layout::parse("7x6 tile=3x2 block_cyclic grid=" + p + "x1 " + storage);
      const std::vector<double> a = make_local(la, [](auto, auto) { return std::numeric_limits<double>::quiet_NaN(); });
      const std::vector<double> b = make_local(lb, [](auto, auto) { return std::numeric_limits<double>::quiet_NaN(); });
      for (double beta : {-0.5, 0.0, 1.0}) {
        const redist::LocalIndex local(lc, world_rank());
        std::vector<double> c(static_cast<std::size_t>(local.elements()), -7.0);  // padding: -7
        const std::vector<double> filled = make_local(lc, [](auto i, auto j) { return beta_zero_nan(i, j); });
        for (std::size_t e = 0; e < c.size(); ++e)
          if (filled[e] != 0.0) c[e] = filled[e];  // the matrix's elements (>= 1, or NaN); padding stays -7
        const std::vector<double> before = c;
        apps::gemm(alpha, la, a.data(), lb, b.data(), beta, lc, c.data(), MPI_COMM_WORLD, o);
        const std::vector<double> got = gather_root(lc, c.data());
        if (world_rank() == 0)
          for (int j = 0; j < 6; ++j)
            for (int i = 0; i < 7; ++i) {
              const double was = beta_zero_nan(i, j);
              if (beta == 0.0) EXPECT_EQ(got[i + j * 7], 0.0) << storage << " k " << k << ": " << i << "," << j;
              else if (std::isnan(was)) EXPECT_TRUE(std::isnan(got[i + j * 7]));
              else EXPECT_EQ(got[i + j * 7], beta * was) << storage << " k " << k << " beta " << beta << ": " << i << "," << j;
            }
        // The padding of the local array (ld 9 > the rows) is the caller's: untouched.
        std::size_t pad_changed = 0;
        for (std::size_t e = 0; e < c.size(); ++e) pad_changed += before[e] == -7.0 && c[e] != -7.0;
        EXPECT_EQ(pad_changed, 0u) << storage;
      }
    }
  }
}

// GEMM reading A and B as remote collection tiles (gemm::Reads::remote) gives the
// READ-task form's C bit for bit, on random owners with ragged tiles (most tiles
// read by other ranks) and on block-cyclic grids, in every communication mode.
TEST_P(Gemm, RemoteReadsMatchReadTasks) {
  const std::string p = std::to_string(world_size());
  struct Layouts {
    std::string a, b, c;
  };
  for (const Layouts& l :
       {Layouts{"45x37 tile=8x6 random seed=1 ranks=" + p, "37x29 tile=6x7 random seed=2 ranks=" + p,
                "45x29 tile=8x7 random seed=3 ranks=" + p},
        Layouts{"45x37 tile=8x6 block_cyclic grid=1x" + p, "37x29 tile=6x7 block_cyclic grid=" + p + "x1",
                "45x29 tile=8x7 block_cyclic grid=1x" + p}}) {
    for (rt::CommMode mode : {rt::CommMode::multiple, rt::CommMode::funneled, rt::CommMode::workers}) {
      SCOPED_TRACE(l.c + " mode " + std::to_string(static_cast<int>(mode)));
      std::vector<double> results[2];
      for (redist::gemm::Reads reads : {redist::gemm::Reads::tasks, redist::gemm::Reads::remote}) {
        rt::LayoutCollection A(redist::Layout::parse(l.a), MPI_COMM_WORLD),
            B(redist::Layout::parse(l.b), MPI_COMM_WORLD), C(redist::Layout::parse(l.c), MPI_COMM_WORLD);
        fill(A, ea), fill(B, eb), fill(C, ec);
        rt::TaskGraph g = redist::gemm::task_graph(1.5, A, B, -0.5, C, reads);
        rt::Options ro;
        ro.threads = GetParam();
        ro.comm_mode = mode;
        ro.eager_limit = 256;  // most tiles by rendezvous
        rt::run(g, MPI_COMM_WORLD, ro);
        results[reads == redist::gemm::Reads::remote] = gather_on_root<double>(C);
      }
      bool same = results[0].size() == results[1].size() &&
                  (results[0].empty() ||  // not the root: nothing gathered (memcmp takes no null pointers)
                   std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(double)) == 0);
      EXPECT_TRUE(same);
      ASSERT_TRUE(all_ranks(same));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Apps, Gemm, ::testing::Values(1, 2),
                         [](const auto& info) { return std::string(info.param == 1 ? "t1" : "t2"); });
