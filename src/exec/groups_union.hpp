// make_group_plan's renumbering of a group's layout to the union of the groups
// (groups.cpp), shared with `redist plan --senders`, which plans the union
// without MPI.
#pragma once

#include <string>
#include <vector>

#include "redist/layout.hpp"

namespace redist::detail {

// `l` (ranks of a group) with every owner r renamed to ranks[r] (union ranks).
// Block-cyclic layouts keep their closed form (a rank map); others get an owner
// function over the original ownership, named after `spec` and the ranks so that
// every rank agrees.
Layout renumber_to_union(const Layout& l, const std::vector<int>& ranks, int union_size, const std::string& spec);

}  // namespace redist::detail
