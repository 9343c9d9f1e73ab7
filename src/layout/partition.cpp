#include <algorithm>
#include <limits>

#include "redist/layout.hpp"

namespace redist {

DimPartition DimPartition::regular(index_t extent, index_t tile, index_t offset) {
  DimPartition p;
  p.extent_ = extent;
  p.tile_ = tile;
  p.offset_ = offset;
  return p;
}

DimPartition DimPartition::irregular(std::vector<index_t> bounds) {
  DimPartition p;
  p.extent_ = bounds.empty() ? 0 : bounds.back();
  p.tile_ = 0;
  p.bounds_ = std::make_shared<const std::vector<index_t>>(std::move(bounds));
  return p;
}

// Methods below assume check() passed (make_plan guarantees it); they stay
// memory-safe on invalid partitions by returning 0 tiles.
index_t DimPartition::ntiles() const {
  if (bounds_) return bounds_->size() >= 2 ? static_cast<index_t>(bounds_->size()) - 1 : 0;
  index_t span;  // extent + offset; ceil(span / tile) without forming span + tile - 1
  if (extent_ <= 0 || tile_ <= 0 || offset_ < 0 || offset_ >= tile_ || !fits_add(extent_, offset_, span)) return 0;
  return (span - 1) / tile_ + 1;
}

index_t DimPartition::tile_of(index_t i) const {
  if (bounds_) {
    auto it = std::upper_bound(bounds_->begin(), bounds_->end(), i);
    return static_cast<index_t>(it - bounds_->begin()) - 1;
  }
  return (i + offset_) / tile_;
}

index_t DimPartition::tile_lo(index_t t) const {
  if (bounds_) return (*bounds_)[t];
  return t == 0 ? 0 : t * tile_ - offset_;
}

index_t DimPartition::tile_size(index_t t) const {
  if (bounds_) return (*bounds_)[t + 1] - (*bounds_)[t];
  index_t lo = tile_lo(t);
  index_t hi = std::min((t + 1) * tile_ - offset_, extent_);
  return hi - lo;
}

std::string DimPartition::check(int d) const {
  if (bounds_) {
    const auto& b = *bounds_;
    if (b.size() < 2 && extent_ != 0)
      return detail::cat("tile boundaries of dimension ", d, " need at least 2 entries (0 and the extent)");
    if (!b.empty() && b.front() != 0)
      return detail::cat("tile boundaries of dimension ", d, " must start at 0, got ", b.front());
    for (size_t i = 1; i < b.size(); ++i)
      if (b[i] <= b[i - 1])
        return detail::cat("tile boundaries of dimension ", d,
                           " must be strictly increasing, got ", b[i - 1], " then ", b[i]);
    return {};
  }
  if (tile_ <= 0)
    return detail::cat("tile size of dimension ", d, " must be > 0, got ", tile_);
  if (offset_ < 0 || offset_ >= tile_)
    return detail::cat("first-tile offset of dimension ", d, " must be in [0, ", tile_,
                       "), got ", offset_);
  // Tile ends are computed as (t + 1) * tile - offset up to the end of the last
  // tile, which lies below extent + offset + tile: that sum must fit.
  index_t end;
  if (!fits_add(extent_, offset_, end) || !fits_add(end, tile_, end)) {
    if (tile_ > extent_)  // the tile is what is too large: one of the extent makes one tile
      return detail::cat("tile size ", tile_, " of dimension ", d, " is too large: extent ", extent_, " + offset ",
                         offset_, " + tile size overflows 64-bit indices (a tile size >= the extent, here ",
                         std::max<index_t>(extent_, 1), ", already makes one tile)");
    if (tile_ == extent_)  // one tile of the whole extent (no tile= given): extent + offset + extent must fit
      return detail::cat("extent ", extent_, " of dimension ", d, " is too large: with one tile of the whole ",
                         "extent (no tile= given, or tile= the extent), extent + offset ", offset_, " + tile size ",
                         "overflows 64-bit indices; the extent may be at most ",
                         (std::numeric_limits<index_t>::max() - offset_) / 2, ", or give a smaller tile=");
    return detail::cat("extent ", extent_, " of dimension ", d, " is too large: extent + offset ", offset_,
                       " + tile size ", tile_, " overflows 64-bit indices (with this tile size and offset the extent ",
                       "may be at most ", std::numeric_limits<index_t>::max() - offset_ - tile_, ")");
  }
  return {};
}

bool DimPartition::operator==(const DimPartition& o) const {
  if (is_regular() != o.is_regular() || extent_ != o.extent_) return false;
  if (is_regular()) return tile_ == o.tile_ && offset_ == o.offset_;
  return *bounds_ == *o.bounds_;
}

}  // namespace redist
