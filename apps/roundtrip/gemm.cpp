// redist::apps::gemm: C = alpha A B + beta C with a redistribution round trip (paper
// 000, sec. 8.7.2, Fig. 18): A, B and C moved to working layouts with one tile size
// and grid, the tiled GEMM (apps/gemm) on the task runtime, C moved back.
#include <algorithm>

#include "gemm/gemm.hpp"
#include "redist/runtime/runtime.hpp"
#include "roundtrip/roundtrip.hpp"

namespace redist::apps {

Report gemm(double alpha, const Layout& a_layout, const void* a, const Layout& b_layout, const void* b, double beta,
            const Layout& c_layout, void* c, MPI_Comm comm, const Options& options) {
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = detail::check_matrix("gemm: A", a_layout, a, rank, ranks);
  if (error.empty()) error = detail::check_matrix("gemm: B", b_layout, b, rank, ranks);
  if (error.empty()) error = detail::check_matrix("gemm: C", c_layout, c, rank, ranks);
  if (error.empty() && (a_layout.shape()[0] != c_layout.shape()[0] || b_layout.shape()[1] != c_layout.shape()[1] ||
                        a_layout.shape()[1] != b_layout.shape()[0]))
    error = "gemm: the shapes must be A m x k, B k x n, C m x n; got A '" + a_layout.spec() + "', B '" +
            b_layout.spec() + "', C '" + c_layout.spec() + "'";
  if (error.empty()) error = detail::check_options("gemm", options, ranks);
  detail::agree(comm, error, {&a_layout, &b_layout, &c_layout}, options);

  const index_t m = c_layout.shape()[0], n = c_layout.shape()[1], k = a_layout.shape()[1];
  Options o = options;  // one tile size for the three working layouts
  if (o.tile == 0) o.tile = gemm_model_tile(std::max({m, n, k}), ranks * o.threads);
  const Layout wa = work_layout(m, k, ranks, o), wb = work_layout(k, n, ranks, o), wc = work_layout(m, n, ranks, o);
  Report r;
  r.work = wc.spec();
  // A and B are only read: const_cast is safe, neither is stored back.
  detail::WorkMatrix A(a_layout, const_cast<void*>(a), wa, comm, o, true, 0, r.to_seconds);
  detail::WorkMatrix B(b_layout, const_cast<void*>(b), wb, comm, o, true, 1, r.to_seconds);
  detail::WorkMatrix C(c_layout, c, wc, comm, o, beta != 0.0, 2, r.to_seconds);
  r.moved = A.moved() || B.moved() || C.moved();
  runtime::TaskGraph g = gemm::task_graph(alpha, A.collection(), B.collection(), beta, C.collection());
  detail::run_and_store(g, C, comm, o, r);
  return r;
}

}  // namespace redist::apps
