// Tiled Cholesky (lower, right-looking) on the PTG API: paper 004, Fig. 1, with its
// four task classes DPOTRF, DTRSM, DSYRK, DGEMM and the same dependencies. Each
// class below is the JDF of the figure line by line: execution space, affinity
// ("parallel partitioning"), then one flow per line of arrows.
#include "cholesky/cholesky.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <utility>

#include "redist/error.hpp"

namespace redist::cholesky {

using runtime::Access;
using runtime::from;
using runtime::LayoutCollection;
using runtime::TaskClass;
using runtime::TaskContext;
using runtime::TaskGraph;
using runtime::Targets;
using runtime::Tile;
using runtime::to;

TaskGraph task_graph(const LayoutCollection& a, std::atomic<std::int64_t>* not_definite) {
  const LayoutCollection& A = a;
  const Layout& l = a.layout();
  if (l.ndim() != 2 || l.shape()[0] != l.shape()[1] || !(l.partition(0) == l.partition(1)) ||
      l.elem_size() != static_cast<index_t>(sizeof(double)))
    detail::fail("cholesky::task_graph: needs a square matrix of doubles with the same tile boundaries "
                 "for rows and columns, got '",
                 l.spec(), "'");
  const std::int64_t nt = a.tiles_m();  // SIZE of the JDF
  auto rows = [&a](std::int64_t t) { return static_cast<int>(a.rows_of(t)); };

  TaskGraph g;
  TaskClass& potrf = g.task_class("DPOTRF");
  TaskClass& trsm = g.task_class("DTRSM");
  TaskClass& syrk = g.task_class("DSYRK");
  TaskClass& gemm = g.task_class("DGEMM");

  // Priorities: the sooner a column is needed by the next panel, the higher (a
  // look-ahead; DAGuE marks the panel tasks "high priority").

  // DPOTRF(k)   k = 0 .. SIZE-1   : A(k, k)
  potrf.param("k", 0, nt - 1)
      .affinity(A, [](auto k) { return Tile{k, k}; })
      .priority([](auto k) { return -4 * k + 3; });
  // T <- (k == 0) ? A(k, k) : T DSYRK(k-1, k)
  // -> T DTRSM(k, k+1 .. SIZE-1)
  // -> A(k, k)
  potrf.flow("T")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto k) { return Tile{k, k}; }))
      .otherwise(from(syrk, "T", [](auto k) { return Targets{k - 1, k}; }))
      .out(to(trsm, "T", [=](auto k) { return Targets{k, {k + 1, nt - 1}}; }))
      .out(to(A, [](auto k) { return Tile{k, k}; }));
  const DimPartition part = l.partition(0);
  potrf.body([=](TaskContext& c, auto k) {
    const int n = rows(k);
    const int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, c.as<double>("T"), n);
    // LAPACK's info for the whole matrix: the order of the leading minor that is
    // not positive definite (the tile's rows before it are).
    if (info > 0) {
      const std::int64_t order = part.tile_lo(k) + info;
      if (not_definite) {
        std::int64_t seen = not_definite->load();
        while (order < seen && !not_definite->compare_exchange_weak(seen, order)) {
        }
      }
      detail::fail("dpotrf: the matrix is not positive definite: its leading minor of order ",
                   order, " is not (LAPACK's info; row ", info, " of diagonal tile ", k, ")");
    }
    if (info < 0) detail::fail("dpotrf: argument ", -info, " is invalid (LAPACK's info ", info, ")");
  });

  // DTRSM(k, n)   k = 0 .. SIZE-1, n = k+1 .. SIZE-1   : A(n, k)
  trsm.param("k", 0, nt - 1)
      .param("n", [](auto k) { return k + 1; }, nt - 1)
      .affinity(A, [](auto k, auto n) { return Tile{n, k}; })
      .priority([](auto k, auto /*n*/) { return -4 * k + 2; });
  // T <- T DPOTRF(k)
  trsm.flow("T", Access::read).in(from(potrf, "T", [](auto k) { return Targets{k}; }));
  // C <- (k == 0) ? A(n, k) : C DGEMM(k-1, n, k)
  // -> A DSYRK(k, n)
  // -> A DGEMM(k, n+1 .. SIZE-1, n)
  // -> B DGEMM(k, n, k+1 .. n-1)
  // -> A(n, k)
  trsm.flow("C")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto k, auto n) { return Tile{n, k}; }))
      .otherwise(from(gemm, "C", [](auto k, auto n) { return Targets{k - 1, n, k}; }))
      .out(to(syrk, "A", [](auto k, auto n) { return Targets{k, n}; }))
      .out(to(gemm, "A", [=](auto k, auto n) { return Targets{k, {n + 1, nt - 1}, n}; }))
      .out(to(gemm, "B", [](auto k, auto n) { return Targets{k, n, {k + 1, n - 1}}; }))
      .out(to(A, [](auto k, auto n) { return Tile{n, k}; }));
  trsm.body([=](TaskContext& c, auto k, auto n) {
    const int mb = rows(n), nb = rows(k);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, mb, nb, 1.0,
                c.as<double>("T"), nb, c.as<double>("C"), mb);
  });

  // DSYRK(k, n)   k = 0 .. SIZE-1, n = k+1 .. SIZE-1   : A(n, n)
  syrk.param("k", 0, nt - 1)
      .param("n", [](auto k) { return k + 1; }, nt - 1)
      .affinity(A, [](auto /*k*/, auto n) { return Tile{n, n}; })
      .priority([](auto /*k*/, auto n) { return -4 * n + 1; });
  // A <- C DTRSM(k, n)
  syrk.flow("A", Access::read).in(from(trsm, "C", [](auto k, auto n) { return Targets{k, n}; }));
  // T <- (k == 0) ? A(n, n) : T DSYRK(k-1, n)
  // -> (n == k+1) ? T DPOTRF(k+1) : T DSYRK(k+1, n)
  syrk.flow("T")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto /*k*/, auto n) { return Tile{n, n}; }))
      .otherwise(from(syrk, "T", [](auto k, auto n) { return Targets{k - 1, n}; }))
      .out_if([](auto k, auto n) { return n == k + 1; }, to(potrf, "T", [](auto k) { return Targets{k + 1}; }))
      .otherwise(to(syrk, "T", [](auto k, auto n) { return Targets{k + 1, n}; }));
  syrk.body([=](TaskContext& c, auto k, auto n) {
    const int nb = rows(n), kb = rows(k);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, nb, kb, -1.0, c.as<double>("A"), nb, 1.0,
                c.as<double>("T"), nb);
  });

  // DGEMM(k, m, n)   k = 0 .. SIZE-2, m = k+2 .. SIZE-1, n = k+1 .. m-1   : A(m, n)
  gemm.param("k", 0, nt - 2)
      .param("m", [](auto k) { return k + 2; }, nt - 1)
      .param("n", [](auto k) { return k + 1; }, [](auto /*k*/, auto m) { return m - 1; })
      .affinity(A, [](auto /*k*/, auto m, auto n) { return Tile{m, n}; })
      .priority([](auto /*k*/, auto /*m*/, auto n) { return -4 * n; });
  // A <- C DTRSM(k, n)
  // B <- C DTRSM(k, m)
  gemm.flow("A", Access::read).in(from(trsm, "C", [](auto k, auto /*m*/, auto n) { return Targets{k, n}; }));
  gemm.flow("B", Access::read).in(from(trsm, "C", [](auto k, auto m) { return Targets{k, m}; }));
  // C <- (k == 0) ? A(m, n) : C DGEMM(k-1, m, n)
  // -> (n == k+1) ? C DTRSM(k+1, m) : C DGEMM(k+1, m, n)
  gemm.flow("C")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto /*k*/, auto m, auto n) { return Tile{m, n}; }))
      .otherwise(from(gemm, "C", [](auto k, auto m, auto n) { return Targets{k - 1, m, n}; }))
      .out_if([](auto k, auto /*m*/, auto n) { return n == k + 1; },
              to(trsm, "C", [](auto k, auto m) { return Targets{k + 1, m}; }))
      .otherwise(to(gemm, "C", [](auto k, auto m, auto n) { return Targets{k + 1, m, n}; }));
  gemm.body([=](TaskContext& c, auto k, auto m, auto n) {
    const int mb = rows(m), nb = rows(n), kb = rows(k);
    // C(m, n) -= B(m, k) * A(n, k)^T
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, mb, nb, kb, -1.0, c.as<double>("B"), mb,
                c.as<double>("A"), nb, 1.0, c.as<double>("C"), mb);
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

void fill_spd(const LayoutCollection& a) {
  const std::int64_t n = a.layout().shape()[0];
  const LocalIndex& local = a.local();
  for (index_t o = 0; o < local.ntiles(); ++o) {
    const Coord c = local.tile(o);
    const Tile t{c[0], a.layout().ndim() > 1 ? c[1] : 0};
    const Box b = a.box(t);
    double* p = a.tile<double>(t);
    for (std::int64_t j = 0; j < b.size[1]; ++j)
      for (std::int64_t i = 0; i < b.size[0]; ++i)
        p[i + j * b.size[0]] = spd_element(b.lo[0] + i, b.lo[1] + j, n);
  }
}

}  // namespace redist::cholesky
