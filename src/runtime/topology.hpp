// The NUMA node of each worker thread, for the steal order (paper 004, sec. III-B:
// DAGuE discovers the machine with hwloc and steals from near cores first).
#pragma once

#include <vector>

namespace redist::runtime::detail {

// Worker w is placed, in thought, on the (w mod P)-th processing unit this process
// may run on (P of them; the runtime does not bind threads); the result is the
// NUMA node (hwloc's logical index) of each. hwloc reads the machine, or the
// topology that HWLOC_XMLFILE / HWLOC_SYNTHETIC name (e.g. "numa:2 core:2 pu:1").
// Empty when the build has no hwloc or the topology cannot be read.
std::vector<int> numa_node_of_workers(int workers);

}  // namespace redist::runtime::detail
