// A data collection over a redist::Layout: owners from its Ownership, local bytes
// from its LocalIndex (the runtime keeps no distribution arithmetic of its own).
#include "redist/runtime/collection.hpp"

#include <cstdlib>
#include <cstring>

#include "redist/error.hpp"

namespace redist::runtime {
namespace {

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int comm_size(MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  return ranks;
}

// The layout, after the checks that LocalIndex needs to hold (a valid layout for
// this communicator, tile storage, 1 or 2 dimensions).
Layout checked(Layout layout, MPI_Comm comm) {
  std::string err = layout.check(comm_size(comm));
  if (!err.empty()) detail::fail("LayoutCollection: invalid layout '", layout.spec(), "': ", err);
  if (layout.ndim() > 2)
    detail::fail("LayoutCollection: tiles are indexed (m, n), so a layout has 1 or 2 dimensions; '",
                 layout.spec(), "' has ", layout.ndim());
  if (layout.storage().kind != StorageKind::tile)
    detail::fail("LayoutCollection: a task reads a tile as one contiguous buffer, so the layout needs "
                 "storage=tile; got '",
                 layout.spec(), "'");
  return layout;
}

}  // namespace

void LayoutCollection::Free::operator()(std::byte* p) const { std::free(p); }

LayoutCollection::LayoutCollection(Layout layout, MPI_Comm comm, Unset)
    : layout_(checked(std::move(layout), comm)),
      rank_(comm_rank(comm)),
      local_(layout_, rank_),
      ntiles_(layout_.ntiles()),
      bytes_(static_cast<std::size_t>(
          checked_mul(local_.elements(), layout_.elem_size(), "local storage bytes"))),
      ranks_(comm_size(comm)) {}

LayoutCollection::LayoutCollection(Layout layout, MPI_Comm comm)
    : LayoutCollection(std::move(layout), comm, Unset{}) {
  if (bytes_ == 0) return;
  // One buffer, cache-line aligned; zeroed as the tiles of a fresh matrix.
  const std::size_t rounded = (bytes_ + 63) / 64 * 64;
  owned_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
  if (!owned_)
    detail::fail("LayoutCollection: rank ", rank_, " cannot allocate ", bytes_, " bytes for '",
                 layout_.spec(), "'");
  std::memset(owned_.get(), 0, bytes_);
  storage_ = owned_.get();
}

LayoutCollection::LayoutCollection(Layout layout, MPI_Comm comm, void* storage, std::size_t bytes)
    : LayoutCollection(std::move(layout), comm, Unset{}) {
  if (bytes < bytes_ || (bytes_ > 0 && storage == nullptr))
    detail::fail("LayoutCollection: rank ", rank_, " stores ", local_.elements(), " elements of ",
                 layout_.elem_size(), " bytes (", bytes_, " bytes) of '", layout_.spec(), "', but got ",
                 storage ? "" : "a null pointer to ", bytes, " bytes");
  storage_ = static_cast<std::byte*>(storage);
}

Coord LayoutCollection::coord(Tile t) const {
  const bool two = layout_.ndim() > 1;
  if (t.m < 0 || t.m >= ntiles_[0] || t.n < 0 || t.n >= (two ? ntiles_[1] : 1))
    detail::fail("tile (", t.m, ", ", t.n, ") is outside the ", tiles_m(), "x", tiles_n(),
                 " tiles of the collection '", layout_.spec(), "'");
  return two ? Coord{t.m, t.n} : Coord{t.m};
}

int LayoutCollection::rank_of(Tile t) const { return layout_.ownership().owner(coord(t), ntiles_); }

Box LayoutCollection::box(Tile t) const {
  Box b = layout_.tile_box(coord(t));
  if (layout_.ndim() == 1) return Box{Coord{b.lo[0], 0}, Coord{b.size[0], 1}};
  return b;
}

Data LayoutCollection::data_of(Tile t) const {
  const Coord c = coord(t);
  const int owner = layout_.ownership().owner(c, ntiles_);
  const Box b = layout_.tile_box(c);
  const auto bytes = static_cast<std::size_t>(b.size.volume() * layout_.elem_size());
  if (owner != rank_) {
    const auto o = static_cast<std::size_t>(owner);
    if (o < mapped_index_.size() && mapped_index_[o])  // the owner's storage, mapped here
      return Data::wrap(const_cast<std::byte*>(mapped_[o].data()) +
                            mapped_index_[o]->address(c, b.lo).offset * layout_.elem_size(),
                        bytes);
    detail::fail("tile (", t.m, ", ", t.n, ") of the collection '", layout_.spec(), "' is owned by rank ",
                 owner, ", not by rank ", rank_, "; only its owner holds its bytes");
  }
  const index_t offset = local_.address(c, b.lo).offset;
  return Data::wrap(storage_ + offset * layout_.elem_size(), bytes);
}

std::string LayoutCollection::describe() const { return detail::cat("the collection '", layout_.spec(), "'"); }

void LayoutCollection::share(std::vector<std::span<const std::byte>> mapped) {
  if (static_cast<int>(mapped.size()) != ranks_)
    detail::fail("LayoutCollection::share: ", describe(), " has ", ranks_, " ranks, but the mapping names ",
                 mapped.size());
  const std::span<const std::byte> own = mapped[static_cast<std::size_t>(rank_)];
  if (own.empty()) {  // this rank shares nothing
    mapped_.clear();
    mapped_index_.clear();
    return;
  }
  if (own.data() != storage_ || own.size() < bytes_)
    detail::fail("LayoutCollection::share: rank ", rank_, "'s own entry must be its storage (", bytes_,
                 " bytes), got another range of ", own.size(), " bytes");
  mapped_ = std::move(mapped);
  mapped_index_.assign(mapped_.size(), nullptr);
  for (int r = 0; r < ranks_; ++r)
    if (r != rank_ && !mapped_[static_cast<std::size_t>(r)].empty())
      mapped_index_[static_cast<std::size_t>(r)] = std::make_shared<const LocalIndex>(layout_, r);
}

std::span<const std::byte> LayoutCollection::storage_of(int rank) const {
  if (mapped_.empty() || rank < 0 || rank >= ranks_) return {};
  return mapped_[static_cast<std::size_t>(rank)];
}

void LayoutCollection::check_element(std::size_t size) const {
  if (static_cast<index_t>(size) != layout_.elem_size())
    detail::fail("LayoutCollection: elements of '", layout_.spec(), "' have ", layout_.elem_size(),
                 " bytes, not ", size);
}

}  // namespace redist::runtime
