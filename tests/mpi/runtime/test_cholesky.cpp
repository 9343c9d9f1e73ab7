// Tiled Cholesky (paper 004, Fig. 1) on 1-4 ranks, checked on rank 0 against
// LAPACK dpotrf of the same matrix and by the residual ||A - L L^T|| / ||A||.
#include <lapacke.h>

#include <cmath>

#include "redist/runtime/cholesky.hpp"
#include "test_util.hpp"

class Cholesky : public ::testing::TestWithParam<Config> {};

namespace {
bool lower(rt::Tile t) { return t.m >= t.n; }

// Closest-to-square grid with P <= Q (paper 004, sec. IV-C).
std::pair<int, int> grid_of(int ranks) {
  int p = 1;
  for (int d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) p = d;
  return {p, ranks / p};
}
}  // namespace

TEST_P(Cholesky, MatchesLapack) {
  // N not a multiple of NB: the last tile row/column is partial.
  for (auto [n, nb] : {std::pair<int, int>{100, 16}, std::pair<int, int>{64, 64}, {45, 8}}) {
    auto [p, q] = grid_of(world_size());
    rt::TiledMatrix a({.rows = n, .cols = n, .tile_rows = nb, .tile_cols = nb, .grid_rows = p,
                       .grid_cols = q},
                      world_rank());
    rt::fill_spd(a);
    rt::TaskGraph g = rt::cholesky_graph(a);
    rt::run(g, MPI_COMM_WORLD, options_of(GetParam()));
    std::vector<double> l = rt::gather_matrix(a, MPI_COMM_WORLD, 0, lower);
    bool ok = true;
    if (world_rank() == 0) {
      std::vector<double> ref(static_cast<std::size_t>(n) * n), orig(ref.size());
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) orig[i + j * n] = ref[i + j * n] = rt::spd_element(i, j, n);
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
      EXPECT_LT(diff / norm, 1e-12) << "n=" << n << " nb=" << nb;
      EXPECT_LT(std::sqrt(res / anorm), 1e-14 * n) << "n=" << n << " nb=" << nb;
      ok = diff / norm < 1e-12;
    }
    ASSERT_TRUE(all_ranks(ok));
  }
}

INSTANTIATE_TEST_SUITE_P(Runtime, Cholesky, RUNTIME_CONFIGS);
