// 2-D block-cyclic tiled matrix (the DPLASMA tile layout used by paper 004's Cholesky).
#include "redist/runtime/collection.hpp"

#include "redist/error.hpp"

namespace redist::runtime {

TiledMatrix::TiledMatrix(const TiledMatrixSpec& spec, int rank) : spec_(spec), rank_(rank) {
  if (spec.rows <= 0 || spec.cols <= 0 || spec.tile_rows <= 0 || spec.tile_cols <= 0 ||
      spec.grid_rows <= 0 || spec.grid_cols <= 0)
    detail::fail("TiledMatrix: sizes must be positive, got ", spec.rows, "x", spec.cols,
                 " tile=", spec.tile_rows, "x", spec.tile_cols, " grid=", spec.grid_rows, "x",
                 spec.grid_cols);
  mt_ = (spec.rows + spec.tile_rows - 1) / spec.tile_rows;
  nt_ = (spec.cols + spec.tile_cols - 1) / spec.tile_cols;
  tiles_.resize(mt_ * nt_);
  for (std::int64_t n = 0; n < nt_; ++n)
    for (std::int64_t m = 0; m < mt_; ++m)
      if (rank_of({m, n}) == rank_)
        tiles_[m + n * mt_] = std::make_unique<double[]>(rows_of(m) * cols_of(n));
}

int TiledMatrix::rank_of(Tile t) const {
  return static_cast<int>((t.m % spec_.grid_rows) * spec_.grid_cols + t.n % spec_.grid_cols);
}

std::int64_t TiledMatrix::rows_of(std::int64_t tm) const {
  return tm == mt_ - 1 ? spec_.rows - tm * spec_.tile_rows : spec_.tile_rows;
}

std::int64_t TiledMatrix::cols_of(std::int64_t tn) const {
  return tn == nt_ - 1 ? spec_.cols - tn * spec_.tile_cols : spec_.tile_cols;
}

double* TiledMatrix::tile(Tile t) const {
  if (t.m < 0 || t.m >= mt_ || t.n < 0 || t.n >= nt_ || !tiles_[t.m + t.n * mt_])
    detail::fail("TiledMatrix: tile (", t.m, ", ", t.n, ") is not stored on rank ", rank_,
                 " (tiles ", mt_, "x", nt_, ", owner ", rank_of(t), ")");
  return tiles_[t.m + t.n * mt_].get();
}

Data TiledMatrix::data_of(Tile t) const {
  return Data::wrap(tile(t), static_cast<std::size_t>(rows_of(t.m) * cols_of(t.n)) * sizeof(double));
}

std::vector<double> gather_matrix(const TiledMatrix& a, MPI_Comm comm, int root, bool (*keep)(Tile)) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto& s = a.spec();
  std::vector<double> full;
  if (rank == root) full.assign(static_cast<std::size_t>(s.rows * s.cols), 0.0);
  std::vector<double> buf;
  // Tiles in one global order: each sender's blocking sends follow the order in
  // which the root receives them, so this cannot deadlock.
  for (std::int64_t tn = 0; tn < a.tiles_n(); ++tn)
    for (std::int64_t tm = 0; tm < a.tiles_m(); ++tm) {
      Tile t{tm, tn};
      if (keep && !keep(t)) continue;
      const int owner = a.rank_of(t);
      const std::int64_t mb = a.rows_of(tm), nb = a.cols_of(tn);
      const int count = static_cast<int>(mb * nb);
      if (rank == root) {
        const double* src = nullptr;
        if (owner == root) {
          src = a.tile(t);
        } else {
          buf.resize(count);
          MPI_Recv(buf.data(), count, MPI_DOUBLE, owner, 7, comm, MPI_STATUS_IGNORE);
          src = buf.data();
        }
        for (std::int64_t j = 0; j < nb; ++j)
          for (std::int64_t i = 0; i < mb; ++i)
            full[(tm * s.tile_rows + i) + (tn * s.tile_cols + j) * s.rows] = src[i + j * mb];
      } else if (owner == rank) {
        MPI_Send(a.tile(t), count, MPI_DOUBLE, root, 7, comm);
      }
    }
  return full;
}

}  // namespace redist::runtime
