// MPI helpers shared by every layer that talks MPI (exec, cost, runtime): the
// collective agreement on errors (ARCHITECTURE.md, "Validate collectively, fail
// cleanly") and the check of an MPI return code.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace redist::detail {

// Collective over `comm`: returns when `local_error` is empty on every rank;
// otherwise throws redist::Error on every rank with the message of the lowest
// rank that reported one, prefixed "redist: rank R: ".
void agree(MPI_Comm comm, const std::string& local_error);

// One value every rank must pass identically: `what` names it in the message
// ("source layout differs"), `value` is this rank's text of it.
struct Same {
  const char* what;
  std::string value;
};
// Collective over `comm`: returns when every rank's values equal rank 0's
// (compared by a hash of the text: every rank runs the same binary, so std::hash
// agrees; rank 0's text is broadcast only when some rank differs). Otherwise
// throws redist::Error on every rank, for the lowest differing rank and its first
// differing item: "<what> between ranks: rank 0 has '...', rank R has '...'; <advice>".
void agree_same(MPI_Comm comm, const std::vector<Same>& items, const char* advice);

// Throws redist::Error naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);

}  // namespace redist::detail
