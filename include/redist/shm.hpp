// Storage in MPI-3 shared-memory windows (docs/shm.md). Arrays allocated here can
// be read and written by the other ranks of their node without a message: the
// `shm` strategy copies each segment once (no packing) when the target or the
// source lies in such a window, and otherwise uses rings in shared memory,
// cross-memory attach or messages (Plan::describe("shm") says which, per peer).
//
//   void* a = redist::shared_allocate(MPI_COMM_WORLD, bytes);  // collective
//   ... plan.execute({a}, {b}, "shm") ...
//   redist::shared_free(a);                                    // collective
//
// Nodes are the groups of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), split
// further into consecutive groups of k ranks when a node size k is forced
// (Options::node_size, or $REDIST_NODE_SIZE for both the plan and the allocation):
// that is how the on-node and off-node paths are both tested on one machine.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

#include "redist/geometry.hpp"

namespace redist {

// Collective over `comm`: every rank allocates `bytes` (>= 0, may differ per
// rank) in one shared window per node of `comm` (node size: `node_size` when > 0,
// else $REDIST_NODE_SIZE when set, else the whole shared-memory node). The memory
// is zeroed and page-aligned; its pages are first touched by the rank that
// allocated it. With `zero` false it is left as MPI gives it, not touched (the
// caller writes every byte it reads and faults the pages where it first writes:
// apps' working copies). Throws redist::Error, the same on every rank, when MPI
// cannot make the window.
void* shared_allocate(MPI_Comm comm, index_t bytes, int node_size = 0, bool zero = true);
// Collective over the ranks that allocated `p` together (the window's node).
// Null is allowed on every rank (nothing is freed then: call it the same number
// of times everywhere). Throws redist::Error when `p` did not come from
// shared_allocate, on the ranks that passed such a pointer: a rank cannot tell
// which window the others free, so where only some ranks pass a foreign pointer
// the others wait in the window's collective free, as with mismatched MPI
// collectives (no agreement is possible without the window's ranks).
void shared_free(void* p);

// Collective over `comm`: where each rank's range [p, p + bytes) (its own
// arguments) lies in this process, one entry per rank of `comm`: the ranges that
// lie in shared windows of this process's node, mapped here; empty for the others
// (another node, the heap, bytes 0). Symmetric: rank a sees b's range exactly when
// b sees a's. What runtime::LayoutCollection::share takes, so that tasks read
// each other's tiles in place (docs/runtime.md).
std::vector<std::span<const std::byte>> shared_ranges(MPI_Comm comm, const void* p, index_t bytes);

// The node size in effect: `requested` when > 0, else $REDIST_NODE_SIZE, else 0
// (the whole shared-memory node). Throws redist::Error on a malformed variable.
int node_size_from(int requested);

}  // namespace redist
