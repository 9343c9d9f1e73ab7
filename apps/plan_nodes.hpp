// `redist plan --ranks-per-node K` (issue 14 item 3): a node's messages and
// volume with and without aggregation per node pair (plan/nodes.hpp, the
// `aggregate` strategy's routes), and the model's time for both.
#pragma once

#include "redist/cost.hpp"
#include "redist/redist.hpp"

namespace redist::cli {

// The lanes need every rank pair's bytes (each node's lanes depend on its peers'
// traffic with their other peers): `sends`, every rank's (rank, peer) pairs with
// their bytes in `send_bytes`, when the caller planned every rank; else (null)
// every rank is planned here, with progress on stderr. Then plans the ranks of
// nodes of `per_node` consecutive ranks among `ranks` (the node of `only_rank`, or
// every node when it is < 0: then the largest figure of any node per column), and
// prints them; with `machine`, Eq. 1 on the slowest rank.
void print_node_traffic(const Layout& src, const Layout& dst, const Region& region, int ranks, int per_node,
                        int only_rank, const Machine* machine, const std::vector<std::pair<int, int>>* sends,
                        const std::vector<long long>* send_bytes);

}  // namespace redist::cli
