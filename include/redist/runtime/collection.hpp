// Data collections: where the initial and final data of a task graph live, and
// which rank owns each piece (paper 004, sec. III-A: A(k, k) in Fig. 1).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "redist/layout.hpp"
#include "redist/runtime/data.hpp"

namespace redist::runtime {

// A 2-D tile index (row of tiles, column of tiles): the A(m, n) of a JDF.
struct Tile {
  std::int64_t m = 0;
  std::int64_t n = 0;
  friend bool operator==(const Tile&, const Tile&) = default;
};

// The interface the runtime needs from any distributed data, as in PaRSEC: who
// owns a tile, and where its local bytes are.
class DataCollection {
 public:
  virtual ~DataCollection() = default;
  // Owner rank of `tile`. Must be the same function on every rank.
  virtual int rank_of(Tile tile) const = 0;
  // The local bytes of `tile`. Precondition: rank_of(tile) is this rank.
  virtual Data data_of(Tile tile) const = 0;
  // How error messages name the collection.
  virtual std::string describe() const { return "a collection"; }
  // Where rank `rank`'s storage lies in this process's address space when the
  // ranks share memory (MPI-3 shared windows on a node), else empty. A task output
  // that lies in this rank's storage, going to tasks of a rank whose storage is
  // mapped here, is then read there in place instead of sent (docs/runtime.md,
  // "Reading in place"). Must be symmetric: rank a maps b's storage exactly when b
  // maps a's. Default: no rank's.
  virtual std::span<const std::byte> storage_of(int /*rank*/) const { return {}; }
};

// The tiles of a redist::Layout as a data collection: any partition (regular,
// ragged edges, explicit boundaries) and any ownership (block_cyclic, random,
// band, table, function), in `tile` storage. Tile (m, n) is the layout's tile
// {m, n}; a 1-D layout's tiles are (m, 0). Owners come from the layout's
// Ownership, local bytes from its LocalIndex: this rank's tiles lie in one
// buffer, tile after tile in LocalIndex order, each column-major with leading
// dimension its row count (the PLASMA/DPLASMA tile layout of paper 004).
//
// The same storage is what redist::Plan::execute reads and writes for this
// layout, so a collection can be redistributed to or from any other layout.
class LayoutCollection final : public DataCollection {
 public:
  // Allocates this rank's storage (zeroed). Reads only the rank and size of
  // `comm` (not collective). Throws redist::Error when layout.check(size of
  // comm) fails, when the storage is not `tile`, or when the layout has more
  // than 2 dimensions.
  LayoutCollection(Layout layout, MPI_Comm comm);
  // Wraps user storage of `bytes` bytes, at least storage_bytes() (local
  // elements x element size; null allowed when that is 0). The memory must
  // outlive the collection and every graph run on it. Same checks as above.
  LayoutCollection(Layout layout, MPI_Comm comm, void* storage, std::size_t bytes);

  // Throws redist::Error when `tile` is outside the layout's tiles.
  int rank_of(Tile tile) const override;
  // Throws redist::Error when `tile` is outside the layout, or owned by another rank
  // whose storage this rank does not map (share): a mapped one is a view into the
  // owner's storage (a task lent across ranks, runtime::Options::lend, writes
  // its owner's tiles there).
  Data data_of(Tile tile) const override;
  // "the collection '<spec>'".
  std::string describe() const override;
  // `mapped[r]`: rank r's storage as mapped in this process (empty where it is
  // not), one entry per rank of the communicator, mapped[rank()] this rank's own
  // storage (or empty: then nothing is shared). Every rank must pass the same
  // mapping pattern (a maps b exactly when b maps a): storage in shared windows
  // (redist::shared_allocate) gives it. Throws redist::Error on a wrong length or
  // when mapped[rank()] is neither empty nor storage().
  void share(std::vector<std::span<const std::byte>> mapped);
  std::span<const std::byte> storage_of(int rank) const override;

  const Layout& layout() const { return layout_; }
  const LocalIndex& local() const { return local_; }
  int rank() const { return rank_; }
  // Tiles per dimension (tiles_n() is 1 for a 1-D layout).
  std::int64_t tiles_m() const { return ntiles_[0]; }
  std::int64_t tiles_n() const { return layout_.ndim() > 1 ? ntiles_[1] : 1; }
  // Rows of the tiles in tile row `m`, columns of those in tile column `n`.
  std::int64_t rows_of(std::int64_t m) const { return layout_.partition(0).tile_size(m); }
  std::int64_t cols_of(std::int64_t n) const {
    return layout_.ndim() > 1 ? layout_.partition(1).tile_size(n) : 1;
  }
  // The global elements of `tile` (2-D box; a 1-D layout's has one column).
  Box box(Tile tile) const;
  bool is_local(Tile tile) const { return rank_of(tile) == rank_; }
  // Column-major storage of a local tile (or a mapped one: data_of). Throws
  // redist::Error unless data_of can give it and sizeof(T) is the layout's element size.
  template <class T>
  T* tile(Tile t) const {
    check_element(sizeof(T));
    return data_of(t).as<T>();
  }
  // This rank's whole storage (what Plan::execute takes for this layout).
  std::byte* storage() const { return storage_; }
  std::size_t storage_bytes() const { return bytes_; }
  template <class T>
  std::span<T> elements() const {
    check_element(sizeof(T));
    return {reinterpret_cast<T*>(storage_), bytes_ / sizeof(T)};
  }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  struct Unset {};
  // The checks and the local index; storage_ is set by the public constructors.
  LayoutCollection(Layout layout, MPI_Comm comm, Unset);
  Coord coord(Tile t) const;  // checked: inside the layout's tiles
  void check_element(std::size_t size) const;

  Layout layout_;
  int rank_ = 0;
  LocalIndex local_;
  Coord ntiles_;
  std::size_t bytes_ = 0;
  std::unique_ptr<std::byte[], Free> owned_;  // null when wrapping user storage
  std::byte* storage_ = nullptr;
  int ranks_ = 1;
  std::vector<std::span<const std::byte>> mapped_;  // share(); empty: nothing shared
  std::vector<std::shared_ptr<const LocalIndex>> mapped_index_;  // per mapped rank (share)
};

}  // namespace redist::runtime
