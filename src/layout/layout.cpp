#include <algorithm>
#include <climits>

#include "layout/placement.hpp"
#include "redist/layout.hpp"

namespace redist {
namespace {

// Fills defaulted block_cyclic coordinates (grid 1, src 0, super 1) to `ndim`
// entries so that equal layouts compare and print equal however they were made.
Ownership normalized(const Ownership& o, int ndim) {
  switch (o.kind()) {
    case Ownership::Kind::block_cyclic: {
      BlockCyclicParams p = o.bc();
      if (p.grid.ndim() == 0) p.grid = Coord(ndim, 1);
      if (p.source.ndim() == 0) p.source = Coord(ndim, 0);
      if (p.super.ndim() == 0) p.super = Coord(ndim, 1);
      return Ownership::block_cyclic(p);
    }
    case Ownership::Kind::band:
      return Ownership::band(o.bnd().width, normalized(*o.bnd().near, ndim),
                             normalized(*o.bnd().far, ndim));
    default:
      return o;
  }
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

Layout::Layout(Coord shape, std::vector<DimPartition> partition, Ownership ownership,
               Storage storage, index_t elem_size)
    : shape_(shape),
      partition_(std::move(partition)),
      ownership_(normalized(ownership, shape.ndim())),
      storage_(storage),
      elem_size_(elem_size) {
  // A placement's patches are this layout's tiles: a cache of its own, so that a
  // placement ownership reused in another layout never sees these patches' owners.
  if (ownership_.kind() == Ownership::Kind::placement)
    std::get<PlacementParams>(ownership_.v_).cache = detail::placement_cache(shape_, partition_);
}

Coord Layout::ntiles() const {
  Coord n(ndim());
  for (int d = 0; d < ndim() && d < static_cast<int>(partition_.size()); ++d)
    n[d] = partition_[d].ntiles();
  return n;
}

Box Layout::tile_box(const Coord& tile) const {
  Box b{Coord(ndim()), Coord(ndim())};
  for (int d = 0; d < ndim(); ++d) {
    b.lo[d] = partition_[d].tile_lo(tile[d]);
    b.size[d] = partition_[d].tile_size(tile[d]);
  }
  return b;
}

std::uint64_t Layout::hash() const { return fnv1a(spec()); }

bool Layout::operator==(const Layout& o) const {
  return shape_ == o.shape_ && partition_ == o.partition_ && ownership_ == o.ownership_ &&
         storage_ == o.storage_ && elem_size_ == o.elem_size_;
}

std::string Layout::check(int comm_size) const {
  using detail::cat;
  const int n = ndim();
  if (n < 1 || n > kMaxDims) return cat("a layout has 1 to ", kMaxDims, " dimensions, got ", n);
  if (static_cast<int>(partition_.size()) != n)
    return cat("the layout has ", n, " dimensions but ", partition_.size(), " tile partitions");
  for (int d = 0; d < n; ++d) {
    if (shape_[d] < 0) return cat("extent of dimension ", d, " must be >= 0, got ", shape_[d]);
    std::string e = partition_[d].check(d);
    if (!e.empty()) return e;
    if (partition_[d].extent() != shape_[d])
      return cat("tile boundaries of dimension ", d, " end at ", partition_[d].extent(),
                 ", the extent is ", shape_[d]);
  }
  if (elem_size_ < 1) return cat("element size must be >= 1 byte, got ", elem_size_);
  index_t bytes = elem_size_;
  for (int d = 0; d < n; ++d)
    if (!fits_mul(bytes, shape_[d], bytes))
      return cat("array ", shape_.str(), " of ", elem_size_, "-byte elements overflows 64-bit byte counts");
  std::string e = ownership_.check(n, ntiles());
  if (e.empty() && ownership_.kind() == Ownership::Kind::placement) e = detail::check_placement(*this);
  if (!e.empty()) return e;
  // random, band and function owners are decided tile by tile: every rank's storage
  // map and plan visit every tile. Measured here (redist plan, random tile=1x1 on
  // 2 ranks, 4 million tiles): 0.8 us and 160 bytes per tile of the layout, 670 MB
  // for one rank's plan. At 2^30 tiles that was 170 GB (a random layout of 10^9
  // tiles grew to 4.3 GB in 20 s: a helper's trial); 2^25 plans in about 30 s and
  // 5 GB on 2 ranks.
  const Ownership::Kind kind = ownership_.kind();
  if (kind == Ownership::Kind::random || kind == Ownership::Kind::band || kind == Ownership::Kind::function) {
    constexpr index_t kMaxVisited = index_t{1} << 25;
    const Coord counts = ntiles();
    index_t tiles = 1;
    bool fits = true;
    for (int d = 0; d < n; ++d) tiles = counts[d] == 0 ? 0 : tiles;  // no tile at all: nothing to visit
    for (int d = 0; d < n && fits && tiles > 0; ++d) fits = fits_mul(tiles, counts[d], tiles) && tiles <= kMaxVisited;
    if (!fits)
      return cat(kind == Ownership::Kind::random ? "random" : kind == Ownership::Kind::band ? "band" : "function",
                 " ownership decides each tile's owner apart, and planning visits every tile (about 1 us and 160 bytes "
                 "each): at most 2^25 (",
                 kMaxVisited, ") tiles, this layout has ", counts.str(),
                 " tiles; use bigger tiles or a block_cyclic ownership (planned in closed form)");
  }
  if (ownership_.per_dimension())  // the planner steps through whole cycles of the grid
    for (int d = 0; d < n; ++d) {
      const auto& p = ownership_.bc();
      const index_t tile = partition_[d].is_regular() ? partition_[d].tile() : 1;
      index_t cycle;
      if (!fits_mul(tile, p.super[d], cycle) || !fits_mul(cycle, p.grid[d], cycle))
        return cat("block_cyclic dimension ", d, ": tile size ", tile, " x super ", p.super[d], " x grid ",
                   p.grid[d], " (one cycle of the grid) overflows 64-bit indices; use smaller factors");
    }
  if (ownership_.ranks_needed() > comm_size)
    return cat("the ownership needs ", ownership_.ranks_needed(), " ranks, the communicator has ",
               comm_size);
  if (storage_.kind == StorageKind::local_array && !ownership_.per_dimension())
    return cat("storage=local_array needs a per-dimension ownership (block_cyclic); this layout uses ",
               spec());
  if (storage_.ld < 0) return cat("leading dimension ld=", storage_.ld, " must be >= 0");
  if (storage_.ld != 0 && storage_.kind != StorageKind::local_array)
    return cat("ld=", storage_.ld, " is the leading dimension of storage=local_array; this layout's storage is ",
               storage_.kind == StorageKind::tile ? "tile" : "tile_pointers",
               " (each tile column-major at its own size): drop ld=");
  return {};
}

Layout block_cyclic_layout(Coord shape, Coord tile, Coord grid, index_t elem_size,
                           StorageKind storage) {
  std::vector<DimPartition> parts;
  for (int d = 0; d < shape.ndim(); ++d) parts.push_back(DimPartition::regular(shape[d], tile[d]));
  return Layout(shape, std::move(parts), Ownership::block_cyclic({.grid = grid, .source = {}, .super = {}}),
                Storage{storage, 0}, elem_size);
}

// ------------------------------------------------------------------ LocalIndex

LocalIndex::LocalIndex(const Layout& layout, int rank) : layout_(layout), rank_(rank) {
  // Everything below divides by grid extents and ranks and multiplies sizes: on
  // an invalid layout it would fault or wrap, so refuse it here too (make_plan
  // has reported it already; this guards direct users such as the harness).
  if (std::string e = layout.check(INT_MAX); !e.empty()) detail::fail("invalid layout ", layout.spec(), ": ", e);
  // A rank the layout does not use holds nothing; a negative one is no rank.
  if (rank < 0) detail::fail("LocalIndex: rank must be >= 0, got ", rank);
  const int n = layout.ndim();
  const Coord nt = layout.ntiles();
  const Ownership& own = layout.ownership();
  local_extent_ = Coord(n);
  per_dim_ = own.per_dimension();
  if (per_dim_) {
    dims_.assign(n, {});
    Coord c;
    if (!own.grid_coord(rank, c)) {
      elements_ = 0;
      return;
    }
    for (int d = 0; d < n; ++d) {
      const auto& p = own.bc();
      const DimPartition& part = layout.partition(d);
      DimMap& m = dims_[d];
      m.G = p.grid[d];
      m.k = p.super[d];
      m.nt = nt[d];
      // super-tiles s with (s + src) % G == c[d]: the first is (c - src) mod G, then every G-th.
      m.s0 = ((c[d] - p.source[d]) % m.G + m.G) % m.G;
      // Super-tiles ceil(nt / k), owned ones ns; k may be as large as the cycle
      // check allows (up to 2^63 - 1), so neither nt + k nor ns * k is formed.
      const index_t nsuper = m.nt / m.k + (m.nt % m.k != 0);
      const index_t ns = m.s0 < nsuper ? (nsuper - 1 - m.s0) / m.G + 1 : 0;
      m.count = 0;
      if (ns > 0) {  // k tiles per owned super-tile, fewer in the array's last one
        const index_t last = m.s0 + (ns - 1) * m.G;
        m.count = (ns - 1) * m.k + (last == nsuper - 1 ? m.nt - last * m.k : m.k);
      }
      m.owns_first = m.count > 0 && m.s0 == 0;
      if (part.is_regular()) {
        m.tile = part.tile();
        m.offset = part.offset();
        // count full tiles, less tile 0's offset and the last tile's clip when owned
        index_t e = m.count * m.tile - (m.owns_first ? m.offset : 0);
        if (m.count > 0 && owned_tile(d, m.count - 1) == m.nt - 1) e -= m.nt * m.tile - m.offset - part.extent();
        local_extent_[d] = e;
      } else {
        m.prefix.assign(1, 0);
        for (index_t l = 0; l < m.count; ++l) m.prefix.push_back(m.prefix.back() + part.tile_size(owned_tile(d, l)));
        local_extent_[d] = m.prefix.back();
      }
    }
    index_t vol = 1;
    for (int d = 0; d < n; ++d) vol = checked_mul(vol, local_extent_[d], "local element count");
    if (layout.storage().kind == StorageKind::local_array && vol > 0) {
      ld_ = layout.storage().ld ? layout.storage().ld : std::max<index_t>(1, local_extent_[0]);
      if (ld_ < local_extent_[0])
        detail::fail("storage=local_array ld=", ld_, " is smaller than the ", local_extent_[0], " local rows of rank ",
                     rank, ": ld must be >= ", local_extent_[0], " there (every rank's ld at least its own local rows; "
                     "ld=0: each rank's own row count)");
      elements_ = ld_;
      for (int d = 1; d < n; ++d) elements_ = checked_mul(elements_, local_extent_[d], "local array size");
    } else {
      elements_ = vol;
    }
    checked_mul(elements_, layout.elem_size(), "local storage bytes");
    return;
  }
  // General ownership: one pass over all tiles (paper 000 sec. 6.1 keeps a global
  // table; we keep only this rank's tiles).
  const index_t total = nt.volume();
  Coord t(n, 0);
  index_t offset = 0;
  const int ranks = own.ranks_needed();
  for (index_t lin = 0; lin < total; ++lin) {
    const int r = own.owner(t, nt);
    if (r < 0 || r >= ranks)
      detail::fail("ownership of ", layout.spec(), " gives tile ", t.str(), " to rank ", r,
                   ", outside [0, ", ranks, ")");
    owners_hash_ = mix64(owners_hash_ ^ static_cast<std::uint32_t>(r));
    if (r == rank) {
      linear_.push_back(lin);
      tile_offset_.push_back(offset);
      offset = checked_add(offset, layout.tile_box(t).size.volume(), "local element count");
    }
    for (int d = 0; d < n && ++t[d] == nt[d]; ++d) t[d] = 0;
  }
  tile_offset_.push_back(offset);
  elements_ = offset;
  checked_mul(elements_, layout.elem_size(), "local storage bytes");
}

LocalIndex local_index(const Layout& layout, int rank, const char* side) {
  try {
    return LocalIndex(layout, rank);
  } catch (const Error& e) {
    detail::fail(side, " layout: ", e.what());
  }
}

index_t LocalIndex::ntiles() const {
  if (!per_dim_) return static_cast<index_t>(linear_.size());
  index_t v = 1;
  for (int d = 0; d < layout_.ndim(); ++d) v *= owned_count(d);
  return v;
}

Coord LocalIndex::tile(index_t ordinal) const {
  const int n = layout_.ndim();
  Coord t(n);
  if (per_dim_) {
    for (int d = 0; d < n; ++d) {
      t[d] = owned_tile(d, ordinal % owned_count(d));
      ordinal /= owned_count(d);
    }
    return t;
  }
  index_t lin = linear_[ordinal];
  const Coord nt = layout_.ntiles();
  for (int d = 0; d < n; ++d) t[d] = lin % nt[d], lin /= nt[d];
  return t;
}

index_t LocalIndex::local_tile_index(int d, index_t t) const {
  const DimMap& m = dims_[d];
  return (t / m.k) / m.G * m.k + t % m.k;
}

index_t LocalIndex::owned_tile(int d, index_t l) const {
  const DimMap& m = dims_[d];
  return (m.s0 + l / m.k * m.G) * m.k + l % m.k;
}

index_t LocalIndex::owned_before(int d, index_t t) const {
  const DimMap& m = dims_[d];
  if (t >= m.nt) return m.count;
  const index_t s = t / m.k;  // super-tile of t
  index_t n = s > m.s0 ? ((s - 1 - m.s0) / m.G + 1) * m.k : 0;
  if (s >= m.s0 && (s - m.s0) % m.G == 0) n += t - s * m.k;
  return n;
}

index_t LocalIndex::tile_prefix(int d, index_t l) const {
  const DimMap& m = dims_[d];
  if (!m.prefix.empty()) return m.prefix[l];
  if (l >= m.count) return local_extent_[d];
  return l * m.tile - (m.owns_first && l > 0 ? m.offset : 0);
}

index_t LocalIndex::ordinal(const Coord& tile) const {
  const int n = layout_.ndim();
  if (per_dim_) {
    index_t o = 0;
    for (int d = n - 1; d >= 0; --d) o = o * owned_count(d) + local_tile_index(d, tile[d]);
    return o;
  }
  const Coord nt = layout_.ntiles();
  index_t lin = 0;
  for (int d = n - 1; d >= 0; --d) lin = lin * nt[d] + tile[d];
  auto it = std::lower_bound(linear_.begin(), linear_.end(), lin);
  REDIST_ASSERT(it != linear_.end() && *it == lin, "tile not owned by rank ", rank_);
  return it - linear_.begin();
}

// Offset of local tile lt in `tile` storage: tiles before it in column-major
// local-tile order. For dimension d, the tiles that precede lt with equal
// indices above d and a smaller index at d contribute
// prefix_d(lt_d) * prod_{e<d} total_e * prod_{e>d} size_e(lt_e).
index_t LocalIndex::per_dim_tile_offset(const Coord& lt) const {
  const int n = layout_.ndim();
  index_t off = 0;
  for (int d = 0; d < n; ++d) {
    index_t v = tile_prefix(d, lt[d]);
    for (int e = 0; e < d; ++e) v *= local_extent_[e];
    for (int e = d + 1; e < n; ++e) v *= tile_prefix(e, lt[e] + 1) - tile_prefix(e, lt[e]);
    off += v;
  }
  return off;
}

Address LocalIndex::local_address(const Coord& lt, const Coord& w) const {
  const int n = layout_.ndim();
  Address a;
  a.strides = Coord(n);
  const StorageKind kind = layout_.storage().kind;
  index_t off = 0, stride = 1;
  if (kind == StorageKind::local_array) {
    for (int d = 0; d < n; ++d) {
      a.strides[d] = stride;
      off += (tile_prefix(d, lt[d]) + w[d]) * stride;
      stride *= d == 0 ? ld_ : local_extent_[d];
    }
    a.offset = off;
    return a;
  }
  for (int d = 0; d < n; ++d) {
    a.strides[d] = stride;
    off += w[d] * stride;
    stride *= tile_prefix(d, lt[d] + 1) - tile_prefix(d, lt[d]);
  }
  if (kind == StorageKind::tile_pointers) {
    index_t o = 0;
    for (int d = n - 1; d >= 0; --d) o = o * owned_count(d) + lt[d];
    a.block = o;
    a.offset = off;
    return a;
  }
  a.offset = per_dim_tile_offset(lt) + off;
  return a;
}

Address LocalIndex::address(const Coord& tile, const Coord& g) const {
  const int n = layout_.ndim();
  const Box box = layout_.tile_box(tile);
  if (per_dim_) {
    Coord lt(n), w(n);
    for (int d = 0; d < n; ++d) lt[d] = local_tile_index(d, tile[d]), w[d] = g[d] - box.lo[d];
    return local_address(lt, w);
  }
  Address a;
  a.strides = Coord(n);
  index_t in_tile = 0, stride = 1;
  for (int d = 0; d < n; ++d) {
    a.strides[d] = stride;
    in_tile += (g[d] - box.lo[d]) * stride;
    stride *= box.size[d];
  }
  if (layout_.storage().kind == StorageKind::tile_pointers) {
    a.block = ordinal(tile);
    a.offset = in_tile;
    return a;
  }
  a.offset = tile_offset_[ordinal(tile)] + in_tile;
  return a;
}

index_t LocalIndex::nblocks() const {
  return layout_.storage().kind == StorageKind::tile_pointers ? ntiles() : 1;
}

index_t LocalIndex::block_elements(index_t b) const {
  if (layout_.storage().kind != StorageKind::tile_pointers) return elements_;
  return layout_.tile_box(tile(b)).size.volume();
}

}  // namespace redist
