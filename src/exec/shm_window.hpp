// The registry of shared windows (include/redist/shm.hpp) and node discovery:
// what the `shm` strategy needs to find, in its own address space, the source
// storage of a rank on its node.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "redist/geometry.hpp"

namespace redist::detail {

// Collective over `comm`: the ranks of this rank's node (see shm.hpp), as a new
// communicator the caller frees.
MPI_Comm node_comm(MPI_Comm comm, int node_size);
// Collective over `comm`: for every rank of `comm`, the first rank (in `comm`) of
// its node (node_comm's nodes).
std::vector<int> node_leaders(MPI_Comm comm, int node_size);

// Where a pointer lives in the shared windows, as every member of its window can
// find it: the window's serial (the same on every member), the member whose part
// of the window holds it, and the byte offset in that part.
struct WindowRef {
  std::uint64_t serial = 0;
  std::int64_t owner = -1;  // -1: not in any window
  std::int64_t offset = 0;
};
// The window part holding [p, p + bytes), with the window's members' ranks in
// MPI_COMM_WORLD (null when not found).
WindowRef find_window(const void* p, index_t bytes, const std::vector<int>** members);
// The address, in this process, of `ref`; null when this process is not a member
// of that window or the range [offset, offset + bytes) is outside the part, and,
// with `world_rank` >= 0, when the part's member is not that rank of MPI_COMM_WORLD
// (a serial names one window in a process; the check guards a ref from elsewhere).
std::byte* window_address(const WindowRef& ref, index_t bytes, int world_rank = -1);

}  // namespace redist::detail
