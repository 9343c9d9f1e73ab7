// Small helpers for MPI tests.
#pragma once

#include <mpi.h>

#include <vector>

#include "redist/layout.hpp"

namespace redist::testing {

inline int world_rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// True on every rank when `ok` holds on every rank (decide collectively, so no
// rank leaves a collective sequence early).
inline bool all_ok(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// This rank's storage for a layout: one vector per block, with the pointer list.
struct LocalStore {
  std::vector<std::vector<std::byte>> blocks;
  std::vector<void*> ptr;
  std::vector<const void*> cptr;
  LocalStore(const Layout& l, int rank) {
    const LocalIndex li(l, rank);
    for (index_t b = 0; b < li.nblocks(); ++b)
      blocks.emplace_back(static_cast<size_t>(li.block_elements(b) * l.elem_size()));
    for (auto& b : blocks) {
      ptr.push_back(b.empty() ? nullptr : b.data());
      cptr.push_back(ptr.back());
    }
  }
};

}  // namespace redist::testing
