// Tiled Cholesky (lower, right-looking) on the PTG API: paper 004, Fig. 1, with its
// four task classes DPOTRF, DTRSM, DSYRK, DGEMM and the same dependencies.
#include "redist/runtime/cholesky.hpp"

#include <cblas.h>
#include <lapacke.h>

#include "redist/error.hpp"

namespace redist::runtime {

TaskGraph cholesky_graph(const TiledMatrix& a) {
  const TiledMatrix& A = a;
  const std::int64_t nt = a.tiles_n();
  if (a.tiles_m() != nt || a.spec().tile_rows != a.spec().tile_cols || a.spec().rows != a.spec().cols)
    detail::fail("cholesky_graph: needs a square matrix with square tiles, got ", a.spec().rows,
                 "x", a.spec().cols, " tile=", a.spec().tile_rows, "x", a.spec().tile_cols);
  auto rows = [&a](std::int64_t t) { return static_cast<int>(a.rows_of(t)); };

  TaskGraph g;
  TaskClass& potrf = g.task_class("DPOTRF");
  TaskClass& trsm = g.task_class("DTRSM");
  TaskClass& syrk = g.task_class("DSYRK");
  TaskClass& gemm = g.task_class("DGEMM");

  // Priorities: the sooner a column is needed by the next panel, the higher
  // (a look-ahead; DAGuE marks the panel tasks "high priority").
  // DPOTRF(k):  k = 0 .. NT-1 ; runs on the owner of A(k, k)
  potrf.param("k", 0, nt - 1)
      .affinity(A, [](P t) { return Tile{t[0], t[0]}; })
      .priority([](P t) { return static_cast<int>(-4 * t[0] + 3); });
  potrf.flow("T")
      .in([](P t) { return t[0] == 0; }, from(A, [](P t) { return Tile{t[0], t[0]}; }))
      .in(from(syrk, "T", [](P t) { return Targets{t[0] - 1, t[0]}; }))
      .out(to(trsm, "T", [=](P t) { return Targets{t[0], {t[0] + 1, nt - 1}}; }))
      .out(to(A, [](P t) { return Tile{t[0], t[0]}; }));
  potrf.body([=](TaskContext& c) {
    int n = rows(c[0]);
    int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, c.as<double>("T"), n);
    if (info != 0) detail::fail("dpotrf: the matrix is not positive definite (info ", info, ")");
  });

  // DTRSM(k, n):  k = 0 .. NT-1, n = k+1 .. NT-1 ; on the owner of A(n, k)
  trsm.param("k", 0, nt - 1)
      .param("n", [](P t) { return t[0] + 1; }, nt - 1)
      .affinity(A, [](P t) { return Tile{t[1], t[0]}; })
      .priority([](P t) { return static_cast<int>(-4 * t[0] + 2); });
  trsm.flow("T", Access::read).in(from(potrf, "T", [](P t) { return Targets{t[0]}; }));
  trsm.flow("C")
      .in([](P t) { return t[0] == 0; }, from(A, [](P t) { return Tile{t[1], t[0]}; }))
      .in(from(gemm, "C", [](P t) { return Targets{t[0] - 1, t[1], t[0]}; }))
      .out(to(syrk, "A", [](P t) { return Targets{t[0], t[1]}; }))
      .out(to(gemm, "A", [=](P t) { return Targets{t[0], {t[1] + 1, nt - 1}, t[1]}; }))
      .out(to(gemm, "B", [](P t) { return Targets{t[0], t[1], {t[0] + 1, t[1] - 1}}; }))
      .out(to(A, [](P t) { return Tile{t[1], t[0]}; }));
  trsm.body([=](TaskContext& c) {
    int m = rows(c[1]), n = rows(c[0]);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, n, 1.0,
                c.as<double>("T"), n, c.as<double>("C"), m);
  });

  // DSYRK(k, n):  k = 0 .. NT-1, n = k+1 .. NT-1 ; on the owner of A(n, n)
  syrk.param("k", 0, nt - 1)
      .param("n", [](P t) { return t[0] + 1; }, nt - 1)
      .affinity(A, [](P t) { return Tile{t[1], t[1]}; })
      .priority([](P t) { return static_cast<int>(-4 * t[1] + 1); });
  syrk.flow("A", Access::read).in(from(trsm, "C", [](P t) { return Targets{t[0], t[1]}; }));
  syrk.flow("T")
      .in([](P t) { return t[0] == 0; }, from(A, [](P t) { return Tile{t[1], t[1]}; }))
      .in(from(syrk, "T", [](P t) { return Targets{t[0] - 1, t[1]}; }))
      .out([](P t) { return t[1] == t[0] + 1; }, to(potrf, "T", [](P t) { return Targets{t[1]}; }))
      .out([](P t) { return t[1] != t[0] + 1; },
           to(syrk, "T", [](P t) { return Targets{t[0] + 1, t[1]}; }));
  syrk.body([=](TaskContext& c) {
    int n = rows(c[1]), k = rows(c[0]);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0, c.as<double>("A"), n, 1.0,
                c.as<double>("T"), n);
  });

  // DGEMM(k, m, n):  k = 0 .. NT-2, m = k+2 .. NT-1, n = k+1 .. m-1 ; on the owner of A(m, n)
  gemm.param("k", 0, nt - 2)
      .param("m", [](P t) { return t[0] + 2; }, nt - 1)
      .param("n", [](P t) { return t[0] + 1; }, [](P t) { return t[1] - 1; })
      .affinity(A, [](P t) { return Tile{t[1], t[2]}; })
      .priority([](P t) { return static_cast<int>(-4 * t[2]); });
  gemm.flow("A", Access::read).in(from(trsm, "C", [](P t) { return Targets{t[0], t[2]}; }));
  gemm.flow("B", Access::read).in(from(trsm, "C", [](P t) { return Targets{t[0], t[1]}; }));
  gemm.flow("C")
      .in([](P t) { return t[0] == 0; }, from(A, [](P t) { return Tile{t[1], t[2]}; }))
      .in(from(gemm, "C", [](P t) { return Targets{t[0] - 1, t[1], t[2]}; }))
      .out([](P t) { return t[2] == t[0] + 1; },
           to(trsm, "C", [](P t) { return Targets{t[0] + 1, t[1]}; }))
      .out([](P t) { return t[2] != t[0] + 1; },
           to(gemm, "C", [](P t) { return Targets{t[0] + 1, t[1], t[2]}; }));
  gemm.body([=](TaskContext& c) {
    int m = rows(c[1]), n = rows(c[2]), k = rows(c[0]);
    // C(m, n) -= B(m, k) * A(n, k)^T
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, n, k, -1.0, c.as<double>("B"), m,
                c.as<double>("A"), n, 1.0, c.as<double>("C"), m);
  });
  return g;
}

double spd_element(std::int64_t i, std::int64_t j, std::int64_t n) {
  if (i < j) std::swap(i, j);
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull ^
                    static_cast<std::uint64_t>(j) * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 31;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  double v = static_cast<double>(h >> 11) / 9007199254740992.0 - 0.5;
  return i == j ? v + static_cast<double>(n) : v;
}

void fill_spd(const TiledMatrix& a) {
  const auto& s = a.spec();
  for (std::int64_t tn = 0; tn < a.tiles_n(); ++tn)
    for (std::int64_t tm = 0; tm < a.tiles_m(); ++tm) {
      if (!a.is_local({tm, tn})) continue;
      double* t = a.tile({tm, tn});
      std::int64_t mb = a.rows_of(tm), nb = a.cols_of(tn);
      for (std::int64_t j = 0; j < nb; ++j)
        for (std::int64_t i = 0; i < mb; ++i)
          t[i + j * mb] = spd_element(tm * s.tile_rows + i, tn * s.tile_cols + j, s.rows);
    }
}

}  // namespace redist::runtime
