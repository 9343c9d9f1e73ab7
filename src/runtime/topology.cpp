#include "topology.hpp"

#include <mutex>

#ifdef REDIST_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace redist::runtime::detail {
namespace {

#ifdef REDIST_HAVE_HWLOC
// The NUMA node of each processing unit this process may run on, in the order of
// the PUs' logical indexes. Read once per process (the machine does not change).
std::vector<int> read_pu_nodes() {
  std::vector<int> nodes;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return nodes;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    // On the real machine, the PUs of the process's binding (mpirun's); a faked
    // topology (HWLOC_SYNTHETIC/XMLFILE) is not this system: all of its PUs.
    const bool bound = hwloc_topology_is_thissystem(topo) &&
                       hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0 &&
                       !hwloc_bitmap_iszero(mine);
    const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    const int numas = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < pus; ++i) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
      if (bound && !hwloc_bitmap_isset(mine, pu->os_index)) continue;
      int node = 0;
      for (int n = 0; n < numas; ++n) {
        hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
        if (numa->cpuset && hwloc_bitmap_isset(numa->cpuset, pu->os_index)) {
          node = n;
          break;
        }
      }
      nodes.push_back(node);
    }
    hwloc_bitmap_free(mine);
  }
  hwloc_topology_destroy(topo);
  return nodes;
}
#endif

}  // namespace

std::vector<int> numa_node_of_workers(int workers) {
#ifdef REDIST_HAVE_HWLOC
  static std::once_flag once;
  static std::vector<int> pu_nodes;
  std::call_once(once, [] { pu_nodes = read_pu_nodes(); });
  std::vector<int> out;
  if (pu_nodes.empty()) return out;
  for (int w = 0; w < workers; ++w) out.push_back(pu_nodes[static_cast<std::size_t>(w) % pu_nodes.size()]);
  return out;
#else
  (void)workers;
  return {};
#endif
}

}  // namespace redist::runtime::detail
