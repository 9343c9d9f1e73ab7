// Data collections: where the initial and final data of a task graph live, and
// which rank owns each piece (paper 004, sec. III-A: A(k, k) in Fig. 1).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "redist/runtime/data.hpp"

namespace redist::runtime {

// A 2-D tile index (row of tiles, column of tiles).
struct Tile {
  std::int64_t m = 0;
  std::int64_t n = 0;
  friend bool operator==(const Tile&, const Tile&) = default;
};

// The interface the runtime needs from any distributed data, as in PaRSEC:
// who owns a tile, and where its local bytes are. Redistribution layouts plug in
// here later (ARCHITECTURE.md, layer `runtime`).
class DataCollection {
 public:
  virtual ~DataCollection() = default;
  // Owner rank of `tile`. Must be the same function on every rank.
  virtual int rank_of(Tile tile) const = 0;
  // The local bytes of `tile`. Precondition: rank_of(tile) is this rank.
  virtual Data data_of(Tile tile) const = 0;
};

// Parameters of a 2-D tiled matrix with 2-D block-cyclic ownership over a P x Q
// row-major process grid (rank = p * Q + q), as ScaLAPACK and DPLASMA use.
struct TiledMatrixSpec {
  std::int64_t rows = 0;       // M
  std::int64_t cols = 0;       // N
  std::int64_t tile_rows = 0;  // MB
  std::int64_t tile_cols = 0;  // NB
  int grid_rows = 1;           // P
  int grid_cols = 1;           // Q
};

// A tiled matrix of doubles, tile storage (each tile contiguous, column-major,
// leading dimension = its row count; the last tile row/column may be smaller).
// Only local tiles are allocated.
class TiledMatrix final : public DataCollection {
 public:
  // Preconditions: positive sizes, grid_rows * grid_cols <= number of ranks.
  TiledMatrix(const TiledMatrixSpec& spec, int rank);

  int rank_of(Tile tile) const override;
  Data data_of(Tile tile) const override;

  const TiledMatrixSpec& spec() const { return spec_; }
  std::int64_t tiles_m() const { return mt_; }
  std::int64_t tiles_n() const { return nt_; }
  // Rows of tiles in tile row `tm`, columns in tile column `tn`.
  std::int64_t rows_of(std::int64_t tm) const;
  std::int64_t cols_of(std::int64_t tn) const;
  bool is_local(Tile tile) const { return rank_of(tile) == rank_; }
  // Column-major storage of a local tile (leading dimension rows_of(tile.m)).
  double* tile(Tile tile) const;

 private:
  TiledMatrixSpec spec_;
  int rank_;
  std::int64_t mt_, nt_;
  std::vector<std::unique_ptr<double[]>> tiles_;  // by m + n * mt_, null if remote
};

// Collects the whole matrix on `root` (column-major, leading dimension rows) for
// checks against a serial reference; other ranks get an empty vector. Only tiles
// with keep(tile) true are sent (e.g. the lower triangle); the rest stay 0.
// Collective over `comm`, whose ranks must match those `a` was built for.
std::vector<double> gather_matrix(const TiledMatrix& a, MPI_Comm comm, int root,
                                  bool (*keep)(Tile) = nullptr);

}  // namespace redist::runtime
