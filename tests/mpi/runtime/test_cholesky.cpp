// Tiled Cholesky (paper 004, Fig. 1; apps/cholesky) on 1-4 ranks over layouts of
// every ownership kind: block-cyclic grids, random, a table with explicit (uneven)
// tile boundaries, a band, a registered function; ragged edge tiles. The factor is
// gathered on rank 0 by the core's redistribution and checked against LAPACK
// dpotrf of the same matrix and by the residual ||A - L L^T|| / ||A||.
#include <lapacke.h>

#include <cmath>

#include "cholesky/cholesky.hpp"
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

INSTANTIATE_TEST_SUITE_P(Runtime, Cholesky, RUNTIME_CONFIGS);
