// Layer `cost` (first part): the paper's bound and achieved bandwidth, and a quick
// in-run measurement of the two machine figures they need. The full calibration
// (NetPIPE-like sweep saved as JSON) and the per-strategy model come later.
#pragma once

#include <mpi.h>

#include "redist/plan.hpp"

namespace redist {

struct Machine {
  double bnet = 0;     // bytes/s between two ranks for messages of the plan's size
  double bmemcpy = 0;  // bytes/s of a single-core memcpy (bytes copied)
};

// Measures Bnet by a ping-pong of `message_bytes` between ranks 0 and 1 (the
// median of a few round trips; 0 with a single rank) and Bmemcpy by copying
// 64 MiB on rank 0; collective, results broadcast to every rank.
Machine quick_calibrate(MPI_Comm comm, index_t message_bytes);

// Paper 000 Eq. 3: max over ranks of max(remote bytes sent, received) / seconds.
double achieved_bandwidth(index_t max_remote_bytes, double seconds);

// Paper 000 Eq. 5 with T_extra = 0: the best achievable Eq. 3 bandwidth when each
// remote byte is packed, sent and unpacked, and local bytes are copied once:
//   bound = Bnet * Bmemcpy / ((2 + r) * Bnet + Bmemcpy),  r = M_local / M_remote.
// With no remote bytes the bound is not defined (returns 0).
double bound_bandwidth(const Machine& m, index_t max_remote_bytes, index_t max_local_bytes);

}  // namespace redist
