// Tile QR (PLASMA's algorithm, DPLASMA's dgeqrf JDF) on the PTG API. Step k:
// GEQRT(k) factors the diagonal tile; UNMQR(k, n) applies its reflectors to the
// rest of tile row k; TSQRT(k, m) eliminates tile (m, k) below against R(k, k)
// (a chain down the column); TSMQR(k, m, n) applies each of those to the pair of
// tiles (k, n), (m, n). Each class below reads as its JDF: execution space,
// affinity, then one flow per line of arrows.
//
// Two departures from the JDF, both from the time when a task read and wrote only
// the tiles of its own rank. The runtime now has remote collection writes
// (docs/runtime.md), but a remote write replaces a whole tile, and STORE(k, k)
// writes R into the upper triangle only (STORE(k, n > k) could become remote writes):
//  - R(k, k) and the tiles of row k travel down their column as copies and come
//    back to their owner through STORE(k, n), which writes them into the matrix;
//  - GEQRT sends fresh copies of R and of its reflectors V, so that nobody reads
//    the diagonal tile while STORE(k, k) writes R back into its upper triangle.
#include "qr/qr.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "redist/error.hpp"

namespace redist::qr {

using runtime::Access;
using runtime::from;
using runtime::LayoutCollection;
using runtime::TaskClass;
using runtime::TaskContext;
using runtime::TaskGraph;
using runtime::Targets;
using runtime::Tile;
using runtime::to;

namespace {
// A per-thread workspace of at least n doubles for the LAPACK kernels.
double* workspace(std::size_t n) {
  thread_local std::vector<double> w;
  if (w.size() < n) w.resize(n);
  return w.data();
}
void check_info(const char* kernel, lapack_int info) {
  if (info != 0) detail::fail(kernel, ": argument ", -info, " is invalid (info ", info, ")");
}
}  // namespace

Layout t_layout(const Layout& a, index_t inner) {
  if (inner < 1) detail::fail("qr::t_layout: the inner blocking must be >= 1, got ", inner);
  if (a.ndim() != 2) detail::fail("qr::t_layout: needs a 2-D layout, got '", a.spec(), "'");
  if (a.ownership().kind() == Ownership::Kind::placement)
    detail::fail("qr::t_layout: a placement ownership has no owner per tile index; got '", a.spec(), "'");
  const index_t mt = a.ntiles()[0];
  return Layout({mt * inner, a.shape()[1]}, {DimPartition::regular(mt * inner, inner), a.partition(1)},
                a.ownership(), Storage{}, a.elem_size());
}

double flops(double m, double n) {
  if (m >= n) return 2 * m * n * n - 2 * n * n * n / 3;
  return 2 * n * m * m - 2 * m * m * m / 3;
}

TaskGraph task_graph(const LayoutCollection& a, const LayoutCollection& t, index_t inner) {
  const LayoutCollection& A = a;
  const LayoutCollection& T = t;
  const Layout& l = a.layout();
  if (l.ndim() != 2 || l.elem_size() != static_cast<index_t>(sizeof(double)))
    detail::fail("qr::task_graph: needs a 2-D matrix of doubles, got '", l.spec(), "'");
  const std::int64_t mt = a.tiles_m(), nt = a.tiles_n(), kt = std::min(mt, nt);
  for (std::int64_t k = 0; k < kt && k < mt - 1; ++k)
    if (a.rows_of(k) < a.cols_of(k))
      detail::fail("qr::task_graph: diagonal tile (", k, ", ", k, ") has ", a.rows_of(k), " rows and ",
                   a.cols_of(k), " columns; tiles above the last tile row need rows >= columns (got '", l.spec(),
                   "')");
  if (!(t.layout() == t_layout(l, inner)))
    detail::fail("qr::task_graph: the T collection must be on '", t_layout(l, inner).spec(), "', got '",
                 t.layout().spec(), "'");
  auto rows = [&a](std::int64_t m) { return static_cast<int>(a.rows_of(m)); };
  auto cols = [&a](std::int64_t n) { return static_cast<int>(a.cols_of(n)); };
  const int ib = static_cast<int>(inner);

  TaskGraph g;
  TaskClass& geqrt = g.task_class("GEQRT");
  TaskClass& unmqr = g.task_class("UNMQR");
  TaskClass& tsqrt = g.task_class("TSQRT");
  TaskClass& tsmqr = g.task_class("TSMQR");
  TaskClass& store = g.task_class("STORE");

  // Priorities: by the column a task works on, the panel (column k) first, so that
  // the next panel's tasks run as soon as they can (a look-ahead).

  // GEQRT(k)   k = 0 .. KT-1   : A(k, k)
  geqrt.param("k", 0, kt - 1)
      .affinity(A, [](auto k) { return Tile{k, k}; })
      .priority([](auto k) { return -4 * k + 3; });
  // A <- (k == 0) ? A(k, k) : A2 TSMQR(k-1, k, k)
  // -> A(k, k)
  geqrt.flow("A")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto k) { return Tile{k, k}; }))
      .otherwise(from(tsmqr, "A2", [](auto k) { return Targets{k - 1, k, k}; }))
      .out(to(A, [](auto k) { return Tile{k, k}; }));
  // V (a copy of the factored tile) -> (k < NT-1) ? V UNMQR(k, k+1 .. NT-1)
  geqrt.flow("V").out_if([=](auto k) { return k < nt - 1; },
                         to(unmqr, "V", [=](auto k) { return Targets{k, {k + 1, nt - 1}}; }));
  // R (a copy of the upper triangle) -> (k < MT-1) ? R TSQRT(k, k+1)
  geqrt.flow("R").out_if([=](auto k) { return k < mt - 1; },
                         to(tsqrt, "R", [](auto k) { return Targets{k, k + 1}; }));
  // T <- T(k, k)   -> (k < NT-1) ? T UNMQR(k, k+1 .. NT-1)   -> T(k, k)
  geqrt.flow("T")
      .in(from(T, [](auto k) { return Tile{k, k}; }))
      .out_if([=](auto k) { return k < nt - 1; }, to(unmqr, "T", [=](auto k) { return Targets{k, {k + 1, nt - 1}}; }))
      .out(to(T, [](auto k) { return Tile{k, k}; }));
  geqrt.body([=](TaskContext& c, auto k) {
    const int m = rows(k), n = cols(k), kb = std::min(m, n), nb = std::min(ib, kb);
    double* tile = c.as<double>("A");
    check_info("dgeqrt", LAPACKE_dgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, tile, m, c.as<double>("T"), ib,
                                             workspace(static_cast<std::size_t>(nb) * n)));
    if (k < nt - 1) {
      const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(m) * n;
      std::memcpy(c.allocate("V", bytes).bytes(), tile, bytes);
    }
    if (k < mt - 1) {  // m >= n here: R is n x n
      double* r = c.allocate("R", sizeof(double) * static_cast<std::size_t>(n) * n).as<double>();
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) r[i + j * n] = i <= j ? tile[i + j * m] : 0.0;
    }
  });

  // UNMQR(k, n)   k = 0 .. KT-1, n = k+1 .. NT-1   : A(k, n)
  unmqr.param("k", 0, kt - 1)
      .param("n", [](auto k) { return k + 1; }, nt - 1)
      .affinity(A, [](auto k, auto n) { return Tile{k, n}; })
      .priority([](auto /*k*/, auto n) { return -4 * n + 1; });
  // V <- V GEQRT(k)   T <- T GEQRT(k)
  unmqr.flow("V", Access::read).in(from(geqrt, "V", [](auto k) { return Targets{k}; }));
  unmqr.flow("T", Access::read).in(from(geqrt, "T", [](auto k) { return Targets{k}; }));
  // C <- (k == 0) ? A(k, n) : A2 TSMQR(k-1, k, n)
  // -> (k < MT-1) ? A1 TSMQR(k, k+1, n) : A(k, n)
  unmqr.flow("C")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto k, auto n) { return Tile{k, n}; }))
      .otherwise(from(tsmqr, "A2", [](auto k, auto n) { return Targets{k - 1, k, n}; }))
      .out_if([=](auto k) { return k < mt - 1; }, to(tsmqr, "A1", [](auto k, auto n) { return Targets{k, k + 1, n}; }))
      .otherwise(to(A, [](auto k, auto n) { return Tile{k, n}; }));
  unmqr.body([=](TaskContext& c, auto k, auto n) {
    const int m = rows(k), kb = std::min(m, cols(k)), nb = std::min(ib, kb), nn = cols(n);
    check_info("dgemqrt", LAPACKE_dgemqrt_work(LAPACK_COL_MAJOR, 'L', 'T', m, nn, kb, nb, c.as<double>("V"), m,
                                               c.as<double>("T"), ib, c.as<double>("C"), m,
                                               workspace(static_cast<std::size_t>(nb) * nn)));
  });

  // TSQRT(k, m)   k = 0 .. KT-1, m = k+1 .. MT-1   : A(m, k)
  tsqrt.param("k", 0, kt - 1)
      .param("m", [](auto k) { return k + 1; }, mt - 1)
      .affinity(A, [](auto k, auto m) { return Tile{m, k}; })
      .priority([](auto k, auto /*m*/) { return -4 * k + 2; });
  // R <- (m == k+1) ? R GEQRT(k) : R TSQRT(k, m-1)
  // -> (m < MT-1) ? R TSQRT(k, m+1) : X STORE(k, k)
  tsqrt.flow("R")
      .in_if([](auto k, auto m) { return m == k + 1; }, from(geqrt, "R", [](auto k) { return Targets{k}; }))
      .otherwise(from(tsqrt, "R", [](auto k, auto m) { return Targets{k, m - 1}; }))
      .out_if([=](auto /*k*/, auto m) { return m < mt - 1; },
              to(tsqrt, "R", [](auto k, auto m) { return Targets{k, m + 1}; }))
      .otherwise(to(store, "X", [](auto k) { return Targets{k, k}; }));
  // A <- (k == 0) ? A(m, k) : A2 TSMQR(k-1, m, k)
  // -> (k < NT-1) ? V TSMQR(k, m, k+1 .. NT-1)
  // -> A(m, k)
  tsqrt.flow("A")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto k, auto m) { return Tile{m, k}; }))
      .otherwise(from(tsmqr, "A2", [](auto k, auto m) { return Targets{k - 1, m, k}; }))
      .out_if([=](auto k) { return k < nt - 1; },
              to(tsmqr, "V", [=](auto k, auto m) { return Targets{k, m, {k + 1, nt - 1}}; }))
      .out(to(A, [](auto k, auto m) { return Tile{m, k}; }));
  // T <- T(m, k)   -> (k < NT-1) ? T TSMQR(k, m, k+1 .. NT-1)   -> T(m, k)
  tsqrt.flow("T")
      .in(from(T, [](auto k, auto m) { return Tile{m, k}; }))
      .out_if([=](auto k) { return k < nt - 1; },
              to(tsmqr, "T", [=](auto k, auto m) { return Targets{k, m, {k + 1, nt - 1}}; }))
      .out(to(T, [](auto k, auto m) { return Tile{m, k}; }));
  tsqrt.body([=](TaskContext& c, auto k, auto m) {
    const int n = cols(k), mm = rows(m), nb = std::min(ib, n);
    check_info("dtpqrt", LAPACKE_dtpqrt_work(LAPACK_COL_MAJOR, mm, n, 0, nb, c.as<double>("R"), n,
                                             c.as<double>("A"), mm, c.as<double>("T"), ib,
                                             workspace(static_cast<std::size_t>(nb) * n)));
  });

  // TSMQR(k, m, n)   k = 0 .. KT-1, m = k+1 .. MT-1, n = k+1 .. NT-1   : A(m, n)
  tsmqr.param("k", 0, kt - 1)
      .param("m", [](auto k) { return k + 1; }, mt - 1)
      .param("n", [](auto k) { return k + 1; }, nt - 1)
      .affinity(A, [](auto /*k*/, auto m, auto n) { return Tile{m, n}; })
      .priority([](auto /*k*/, auto /*m*/, auto n) { return -4 * n; });
  // V <- A TSQRT(k, m)   T <- T TSQRT(k, m)
  tsmqr.flow("V", Access::read).in(from(tsqrt, "A", [](auto k, auto m) { return Targets{k, m}; }));
  tsmqr.flow("T", Access::read).in(from(tsqrt, "T", [](auto k, auto m) { return Targets{k, m}; }));
  // A1 <- (m == k+1) ? C UNMQR(k, n) : A1 TSMQR(k, m-1, n)
  // -> (m < MT-1) ? A1 TSMQR(k, m+1, n) : X STORE(k, n)
  tsmqr.flow("A1")
      .in_if([](auto k, auto m) { return m == k + 1; },
             from(unmqr, "C", [](auto k, auto /*m*/, auto n) { return Targets{k, n}; }))
      .otherwise(from(tsmqr, "A1", [](auto k, auto m, auto n) { return Targets{k, m - 1, n}; }))
      .out_if([=](auto /*k*/, auto m) { return m < mt - 1; },
              to(tsmqr, "A1", [](auto k, auto m, auto n) { return Targets{k, m + 1, n}; }))
      .otherwise(to(store, "X", [](auto k, auto /*m*/, auto n) { return Targets{k, n}; }));
  // A2 <- (k == 0) ? A(m, n) : A2 TSMQR(k-1, m, n)
  // -> (m == k+1 && n == k+1) ? A GEQRT(k+1)
  // -> (m == k+1 && n >  k+1) ? C UNMQR(k+1, n)
  // -> (m >  k+1 && n == k+1) ? A TSQRT(k+1, m)
  // -> (m >  k+1 && n >  k+1) ? A2 TSMQR(k+1, m, n)
  tsmqr.flow("A2")
      .in_if([](auto k) { return k == 0; }, from(A, [](auto /*k*/, auto m, auto n) { return Tile{m, n}; }))
      .otherwise(from(tsmqr, "A2", [](auto k, auto m, auto n) { return Targets{k - 1, m, n}; }))
      .out_if([](auto k, auto m, auto n) { return m == k + 1 && n == k + 1; },
              to(geqrt, "A", [](auto k) { return Targets{k + 1}; }))
      .out_if([](auto k, auto m, auto n) { return m == k + 1 && n > k + 1; },
              to(unmqr, "C", [](auto k, auto /*m*/, auto n) { return Targets{k + 1, n}; }))
      .out_if([](auto k, auto m, auto n) { return m > k + 1 && n == k + 1; },
              to(tsqrt, "A", [](auto k, auto m) { return Targets{k + 1, m}; }))
      .out_if([](auto k, auto m, auto n) { return m > k + 1 && n > k + 1; },
              to(tsmqr, "A2", [](auto k, auto m, auto n) { return Targets{k + 1, m, n}; }));
  tsmqr.body([=](TaskContext& c, auto k, auto m, auto n) {
    const int kb = cols(k), mk = rows(k), mm = rows(m), nn = cols(n), nb = std::min(ib, kb);
    check_info("dtpmqrt", LAPACKE_dtpmqrt_work(LAPACK_COL_MAJOR, 'L', 'T', mm, nn, kb, 0, nb, c.as<double>("V"), mm,
                                               c.as<double>("T"), ib, c.as<double>("A1"), mk, c.as<double>("A2"),
                                               mm, workspace(static_cast<std::size_t>(nb) * nn)));
  });

  // STORE(k, n)   k = 0 .. min(MT-1, NT)-1, n = k .. NT-1   : A(k, n)
  store.param("k", 0, std::min(mt - 1, nt) - 1)
      .param("n", [](auto k) { return k; }, nt - 1)
      .affinity(A, [](auto k, auto n) { return Tile{k, n}; })
      .priority([](auto /*k*/, auto n) { return -4 * n; });
  // X <- (n == k) ? R TSQRT(k, MT-1) : A1 TSMQR(k, MT-1, n)
  store.flow("X", Access::read)
      .in_if([](auto k, auto n) { return n == k; }, from(tsqrt, "R", [=](auto k) { return Targets{k, mt - 1}; }))
      .otherwise(from(tsmqr, "A1", [=](auto k, auto n) { return Targets{k, mt - 1, n}; }));
  store.body([=, &A](TaskContext& c, auto k, auto n) {
    const int m = rows(k), nn = cols(n);
    const double* x = c.as<double>("X");
    double* home = A.tile<double>(Tile{k, n});
    if (x == home) return;
    if (n == k) {  // R, nn x nn: its upper triangle only (the reflectors below stay)
      for (int j = 0; j < nn; ++j)
        for (int i = 0; i <= j; ++i) home[i + j * m] = x[i + j * nn];
    } else {
      std::memcpy(home, x, sizeof(double) * static_cast<std::size_t>(m) * nn);
    }
  });
  return g;
}

}  // namespace redist::qr
