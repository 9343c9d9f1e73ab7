// A C++ program against the installed redist::apps: the Cholesky of a 40x40
// matrix in ScaLAPACK storage (tiles 7, grid 1xP) through the round trip, checked
// on rank 0 against the matrix itself (L L^T = A, lower triangle; the upper one
// untouched). Its matrix is the tiled Cholesky's own (cholesky/cholesky.hpp), so
// both installed headers are used.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <redist/apps.hpp>
#include <redist/redist.hpp>

#include "cholesky/cholesky.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int n = 40;
  double err = 0;
  {
    const redist::Layout user =
        redist::Layout::parse("40x40 tile=7x7 block_cyclic grid=1x" + std::to_string(p) + " storage=local_array");
    const redist::LocalIndex local(user, rank);
    std::vector<double> a(static_cast<size_t>(local.elements()));
    for (redist::index_t o = 0; o < local.ntiles(); ++o) {
      const redist::Coord t = local.tile(o);
      const redist::Box b = user.tile_box(t);
      const redist::Address at = local.address(t, b.lo);
      for (redist::index_t j = 0; j < b.size[1]; ++j)
        for (redist::index_t i = 0; i < b.size[0]; ++i)
          a[static_cast<size_t>(at.offset + i + j * at.strides[1])] =
              redist::cholesky::spd_element(b.lo[0] + i, b.lo[1] + j, n);
    }
    redist::apps::potrf(user, a.data(), MPI_COMM_WORLD, {.threads = 1});  // as docs/apps.md writes it
    const redist::Layout whole = redist::Layout::parse("40x40");  // one tile on rank 0
    redist::Plan gather = redist::make_plan(user, whole, redist::Region::whole(user.shape()), MPI_COMM_WORLD);
    std::vector<double> g(rank == 0 ? n * n : 1);
    gather.execute(a.data(), g.data());
    for (int i = 0; rank == 0 && i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k <= std::min(i, j); ++k) s += g[i + k * n] * g[j + k * n];
        const double want = redist::cholesky::spd_element(i, j, n);
        err = std::max(err, std::abs((j <= i ? s : g[i + j * n]) - want) / std::abs(want));
      }
  }
  if (rank == 0) std::printf("consumer_apps: potrf on %d ranks, max relative error %.2e: %s\n", p, err,
                             err < 1e-12 ? "ok" : "WRONG");
  MPI_Finalize();
  return err < 1e-12 ? 0 : 1;
}
