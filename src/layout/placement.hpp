// Placement ownerships (paper 003), private to the layout layer: the patch grid
// and the owner table a placement derives from its source layout.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "redist/layout.hpp"

namespace redist::detail {

struct PlacementCache {
  Coord shape;                         // the layout's shape
  std::vector<DimPartition> patches;   // the layout's tile boundaries: the patch grid
  std::once_flag once;
  std::vector<int> owners;             // per patch, column-major patch order
};

// Empty when the placement of `l` (its ownership) can be computed, else why not.
std::string check_placement(const Layout& l);
// The owner table of a placement ownership, computed on first use (thread safe).
const std::vector<int>& placement_owners(const PlacementParams& p);
// A new cache for a layout of this shape and patch grid.
std::shared_ptr<PlacementCache> placement_cache(const Coord& shape, const std::vector<DimPartition>& patches);

}  // namespace redist::detail
