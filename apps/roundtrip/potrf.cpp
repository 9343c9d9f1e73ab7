// redist::apps::potrf: Cholesky with a redistribution round trip (paper 000, sec.
// 8.7, Figs. 15 and 18): caller's layout -> working layout, the tiled Cholesky of
// paper 004 Fig. 1 (apps/cholesky) on the task runtime, back.
#include <atomic>
#include <cstdint>
#include <limits>

#include "cholesky/cholesky.hpp"
#include "mpi/agree.hpp"
#include "redist/runtime/runtime.hpp"
#include "roundtrip/roundtrip.hpp"

namespace redist::apps {

Report potrf(const Layout& layout, void* data, MPI_Comm comm, const Options& options) {
  return potrf(layout, data, Submatrix{}, comm, options);
}

Report potrf(const Layout& layout, void* data, const Submatrix& sub, MPI_Comm comm, const Options& options) {
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = detail::check_matrix("potrf: the matrix", layout, data, rank, ranks);
  Box box;
  if (error.empty()) error = detail::resolve("potrf: the matrix", layout, sub, box);
  if (error.empty() && box.size[0] != box.size[1])
    error = detail::whole(layout, box)
                ? "potrf: the matrix must be square, got '" + layout.spec() + "'"
                : "potrf: the submatrix must be square, got " + box.size.str() + " at " + box.lo.str() + " of '" +
                      layout.spec() + "'";
  if (error.empty()) error = detail::check_options("potrf", options, ranks);
  detail::agree(comm, error, {&layout}, {box}, options);

  Report r;
  const index_t n = box.size[0];
  const Layout work = work_layout(n, n, ranks, options);
  r.work = work.spec();
  // dpotrf 'L' reads and writes only the tiles on and below the diagonal: only they
  // travel (half the bytes), and the caller's strict upper triangle is never touched.
  detail::WorkMatrix a(layout, data, box, work, comm, options, true, 0, r.to_seconds, detail::Part::lower);
  r.moved = a.moved();
  constexpr std::int64_t kDefinite = std::numeric_limits<std::int64_t>::max();
  std::atomic<std::int64_t> not_definite{kDefinite};
  runtime::TaskGraph g = cholesky::task_graph(a.collection(), &not_definite);
  try {
    detail::run_graph(g, comm, options, r);
  } catch (const MpiError&) {
    throw;  // local: the other ranks may not be here
  } catch (const Error& e) {
    // The runtime threw the same error on every rank, and nothing went back; where
    // the matrix is not positive definite, the rank whose DPOTRF failed holds
    // LAPACK's info.
    std::int64_t order = not_definite.load();
    redist::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &order, 1, MPI_INT64_T, MPI_MIN, comm),
                              "MPI_Allreduce", comm);
    if (order != kDefinite) throw NotPositiveDefinite(e.what(), order);
    throw;
  }
  a.store_back(r.back_seconds);
  return r;
}

}  // namespace redist::apps
