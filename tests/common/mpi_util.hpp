// Small helpers for MPI tests.
#pragma once

#include <mpi.h>

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

}  // namespace redist::testing
