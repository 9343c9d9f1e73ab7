// MPI helpers shared by every layer that talks MPI (exec, cost, runtime): the
// collective agreement on errors (ARCHITECTURE.md, "Validate collectively, fail
// cleanly") and the check of an MPI return code.
#pragma once

#include <mpi.h>

#include <string>

namespace redist::detail {

// Collective over `comm`: returns when `local_error` is empty on every rank;
// otherwise throws redist::Error on every rank with the message of the lowest
// rank that reported one, prefixed "redist: rank R: ".
void agree(MPI_Comm comm, const std::string& local_error);

// Throws redist::Error naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

}  // namespace redist::detail
