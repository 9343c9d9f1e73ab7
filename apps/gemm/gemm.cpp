// Tiled GEMM on the PTG API, each class beside its JDF (DPLASMA's summa dgemm). The
// tiles of A and B reach the ranks that need them either through READ tasks on their
// owners (DPLASMA's form) or as the runtime's remote collection reads (Reads).
#include "gemm/gemm.hpp"

#include <cblas.h>

#include "redist/error.hpp"

namespace redist::gemm {

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

// GEMM(m, n, k) with its A and B inputs from `a_in` and `b_in`; `kp`: the tiles of k.
void gemm_class(TaskClass& gemm, double alpha, const DimPartition& kp, double beta, const LayoutCollection& C,
                runtime::Endpoint a_in, runtime::Endpoint b_in) {
  const std::int64_t mt = C.tiles_m(), nt = C.tiles_n(), kt = kp.ntiles();
  // GEMM(m, n, k)   m = 0 .. MT-1, n = 0 .. NT-1, k = 0 .. KT-1   : C(m, n)
  gemm.param("m", 0, mt - 1)
      .param("n", 0, nt - 1)
      .param("k", 0, kt - 1)
      .affinity(C, [](auto m, auto n) { return Tile{m, n}; })
      .priority([](auto /*m*/, auto /*n*/, auto k) { return -k; });
  gemm.flow("A", Access::read).in(std::move(a_in));
  gemm.flow("B", Access::read).in(std::move(b_in));
  // C <- (k == 0) ? C(m, n) : C GEMM(m, n, k-1)
  // -> (k < KT-1) ? C GEMM(m, n, k+1) : C(m, n)
  gemm.flow("C")
      .in_if([](auto, auto, auto k) { return k == 0; }, from(C, [](auto m, auto n) { return Tile{m, n}; }))
      .otherwise(from(gemm, "C", [](auto m, auto n, auto k) { return Targets{m, n, k - 1}; }))
      .out_if([=](auto, auto, auto k) { return k < kt - 1; },
              to(gemm, "C", [](auto m, auto n, auto k) { return Targets{m, n, k + 1}; }))
      .otherwise(to(C, [](auto m, auto n) { return Tile{m, n}; }));
  gemm.body([=, &C](TaskContext& ctx, auto m, auto n, auto k) {
    const int mb = static_cast<int>(C.rows_of(m)), nb = static_cast<int>(C.cols_of(n)),
              kb = static_cast<int>(kp.tile_size(k));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, mb, nb, kb, alpha, ctx.as<double>("A"), mb,
                ctx.as<double>("B"), kb, k == 0 ? beta : 1.0, ctx.as<double>("C"), mb);
  });
}

}  // namespace

TaskGraph task_graph(double alpha, const LayoutCollection& a, const LayoutCollection& b, double beta,
                     const LayoutCollection& c, Reads reads) {
  const LayoutCollection &A = a, &B = b;
  for (const LayoutCollection* x : {&a, &b, &c})
    if (x->layout().ndim() != 2 || x->layout().elem_size() != static_cast<index_t>(sizeof(double)))
      detail::fail("gemm::task_graph: needs 2-D matrices of doubles, got '", x->layout().spec(), "'");
  const Layout &la = a.layout(), &lb = b.layout(), &lc = c.layout();
  if (!(la.partition(0) == lc.partition(0)) || !(lb.partition(1) == lc.partition(1)) ||
      !(la.partition(1) == lb.partition(0)))
    detail::fail("gemm::task_graph: the tiles of A (m x k), B (k x n) and C (m x n) must agree: A's rows with C's, "
                 "B's columns with C's, A's columns with B's rows; got A '",
                 la.spec(), "', B '", lb.spec(), "', C '", lc.spec(), "'");
  const std::int64_t mt = c.tiles_m(), nt = c.tiles_n(), kt = a.tiles_n();

  TaskGraph g;
  if (reads == Reads::remote) {
    // A <- A(m, k)   B <- B(k, n): the owners send them (runtime remote reads)
    gemm_class(g.task_class("GEMM"), alpha, la.partition(1), beta, c,
               from(A, [](auto m, auto /*n*/, auto k) { return Tile{m, k}; }),
               from(B, [](auto /*m*/, auto n, auto k) { return Tile{k, n}; }));
    return g;
  }
  TaskClass& read_a = g.task_class("READ_A");
  TaskClass& read_b = g.task_class("READ_B");
  TaskClass& gemm = g.task_class("GEMM");

  // READ_A(m, k)   m = 0 .. MT-1, k = 0 .. KT-1   : A(m, k)
  // A <- A(m, k)   -> A GEMM(m, 0 .. NT-1, k)
  read_a.param("m", 0, mt - 1).param("k", 0, kt - 1).affinity(A, [](auto m, auto k) { return Tile{m, k}; });
  read_a.flow("A", Access::read)
      .in(from(A, [](auto m, auto k) { return Tile{m, k}; }))
      .out(to(gemm, "A", [=](auto m, auto k) { return Targets{m, {0, nt - 1}, k}; }));
  read_a.body([](TaskContext&, auto, auto) {});

  // READ_B(k, n)   k = 0 .. KT-1, n = 0 .. NT-1   : B(k, n)
  // B <- B(k, n)   -> B GEMM(0 .. MT-1, n, k)
  read_b.param("k", 0, kt - 1).param("n", 0, nt - 1).affinity(B, [](auto k, auto n) { return Tile{k, n}; });
  read_b.flow("B", Access::read)
      .in(from(B, [](auto k, auto n) { return Tile{k, n}; }))
      .out(to(gemm, "B", [=](auto k, auto n) { return Targets{{0, mt - 1}, n, k}; }));
  read_b.body([](TaskContext&, auto, auto) {});

  // A <- A READ_A(m, k)   B <- B READ_B(k, n)
  gemm_class(gemm, alpha, la.partition(1), beta, c,
             from(read_a, "A", [](auto m, auto /*n*/, auto k) { return Targets{m, k}; }),
             from(read_b, "B", [](auto /*m*/, auto n, auto k) { return Targets{k, n}; }));
  return g;
}

TaskGraph task_graph(double alpha, const DimPartition& k, Pack pack_a, Pack pack_b, double beta,
                     const LayoutCollection& c, Ranks rank_a, Ranks rank_b) {
  const Layout& lc = c.layout();
  if (lc.ndim() != 2 || lc.elem_size() != static_cast<index_t>(sizeof(double)))
    detail::fail("gemm::task_graph: needs a 2-D matrix of doubles for C, got '", lc.spec(), "'");
  if (!pack_a || !pack_b) detail::fail("gemm::task_graph: pack_a and pack_b must be callable");
  const LayoutCollection& C = c;
  const DimPartition kp = k;
  const std::int64_t mt = c.tiles_m(), nt = c.tiles_n(), kt = k.ntiles();

  TaskGraph g;
  TaskClass& read_a = g.task_class("READ_A");
  TaskClass& read_b = g.task_class("READ_B");
  TaskClass& gemm = g.task_class("GEMM");
  // The priority of the GEMMs they feed: a READ of step k runs when step k comes,
  // not all at the start, so that few packed tiles are alive at once.

  // READ_A(m, k)   m = 0 .. MT-1, k = 0 .. KT-1   : C(m, 0)
  // A <- NEW (pack_a(m, k))   -> A GEMM(m, 0 .. NT-1, k)
  read_a.param("m", 0, mt - 1).param("k", 0, kt - 1).priority([](auto /*m*/, auto k) { return -k; });
  if (rank_a)
    read_a.affinity([=](auto m, auto k) { return rank_a(m, k); });
  else
    read_a.affinity(C, [](auto m) { return Tile{m, 0}; });
  read_a.flow("A").out(to(gemm, "A", [=](auto m, auto k) { return Targets{m, {0, nt - 1}, k}; }));
  read_a.body([=, &C](TaskContext& ctx, auto m, auto k) {
    const auto bytes = static_cast<std::size_t>(C.rows_of(m) * kp.tile_size(k)) * sizeof(double);
    pack_a(m, k, ctx.allocate("A", bytes).as<double>());
  });

  // READ_B(k, n)   k = 0 .. KT-1, n = 0 .. NT-1   : C(0, n)
  // B <- NEW (pack_b(k, n))   -> B GEMM(0 .. MT-1, n, k)
  read_b.param("k", 0, kt - 1).param("n", 0, nt - 1).priority([](auto k) { return -k; });
  if (rank_b)
    read_b.affinity([=](auto k, auto n) { return rank_b(k, n); });
  else
    read_b.affinity(C, [](auto /*k*/, auto n) { return Tile{0, n}; });
  read_b.flow("B").out(to(gemm, "B", [=](auto k, auto n) { return Targets{{0, mt - 1}, n, k}; }));
  read_b.body([=, &C](TaskContext& ctx, auto k, auto n) {
    const auto bytes = static_cast<std::size_t>(kp.tile_size(k) * C.cols_of(n)) * sizeof(double);
    pack_b(k, n, ctx.allocate("B", bytes).as<double>());
  });

  gemm_class(gemm, alpha, k, beta, c, from(read_a, "A", [](auto m, auto /*n*/, auto k) { return Targets{m, k}; }),
             from(read_b, "B", [](auto /*m*/, auto n, auto k) { return Targets{k, n}; }));
  return g;
}

}  // namespace redist::gemm
