// redist::apps::geqrf: tile QR with a redistribution round trip (paper 000, sec.
// 8.7, Fig. 14): caller's layout -> working layout, PLASMA's tile QR (apps/qr) on
// the task runtime, back. The T factors stay on the working layout.
#include <algorithm>

#include "qr/qr.hpp"
#include "redist/runtime/runtime.hpp"
#include "roundtrip/roundtrip.hpp"

namespace redist::apps {

QrFactors geqrf(const Layout& layout, void* data, MPI_Comm comm, const Options& options) {
  return geqrf(layout, data, Submatrix{}, comm, options);
}

QrFactors geqrf(const Layout& layout, void* data, const Submatrix& sub, MPI_Comm comm, const Options& options) {
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = detail::check_matrix("geqrf: the matrix", layout, data, rank, ranks);
  Box box;
  if (error.empty()) error = detail::resolve("geqrf: the matrix", layout, sub, box);
  if (error.empty()) error = detail::check_options("geqrf", options, ranks);
  detail::agree(comm, error, {&layout}, {box}, options);

  QrFactors f;
  Report& r = f.report;
  f.work = qr_work_layout(box.size[0], box.size[1], ranks, options);
  r.work = f.work.spec();
  const index_t tile = std::min(f.work.partition(0).tile(), f.work.partition(1).tile());
  f.inner = options.inner > 0 ? std::min(options.inner, tile) : std::min<index_t>(32, tile);
  detail::WorkMatrix a(layout, data, box, f.work, comm, options, true, 0, r.to_seconds);
  r.moved = a.moved();
  f.t = std::make_unique<runtime::LayoutCollection>(qr::t_layout(f.work, f.inner), comm);
  runtime::TaskGraph g = qr::task_graph(a.collection(), *f.t, f.inner);
  detail::run_and_store(g, a, comm, options, r);
  return f;
}

}  // namespace redist::apps
