// `redist plan --ranks-per-node K` (issue 14 item 3): a node's messages and
// volume with and without aggregation per node pair (plan/nodes.hpp, the
// `aggregate` strategy's routes), and the model's time for both.
#pragma once

#include "redist/cost.hpp"
#include "redist/redist.hpp"

namespace redist::cli {

// Plans every rank (the node pairs that exchange data set the lanes), then the
// ranks of nodes of `per_node` consecutive ranks among `ranks` (the node of
// `only_rank`, or every node when it is < 0: then the largest figure of any node
// per column), and prints them; with `machine`, Eq. 1 on the slowest rank.
void print_node_traffic(const Layout& src, const Layout& dst, const Region& region, int ranks, int per_node,
                        int only_rank, const Machine* machine);

}  // namespace redist::cli
