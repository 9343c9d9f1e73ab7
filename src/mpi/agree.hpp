// MPI helpers shared by every layer that talks MPI (exec, cost, runtime): the
// collective agreement on errors (ARCHITECTURE.md, "Validate collectively, fail
// cleanly") and the check of an MPI return code.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace redist::detail {

// Collective over `comm`: returns when `local_error` is empty on every rank;
// otherwise throws redist::Error (redist::MismatchError when `mismatch`: the
// error is that ranks disagree) on every rank with the message of the lowest
// rank that reported one, prefixed "redist: rank R: ".
void agree(MPI_Comm comm, const std::string& local_error, bool mismatch = false);

// Empty while MPI runs; before MPI_Init or after MPI_Finalize the error of `what`
// called there ("redist: WHAT before MPI_Init: a plan communicates through MPI",
// `why` after the colon): this process's own, nothing to agree over (Open MPI
// aborts the job at the first other MPI call there).
inline constexpr const char* kPlanNeedsMpi = "a plan communicates through MPI";
inline constexpr const char* kWindowNeedsMpi = "shared windows are made and freed through MPI";
std::string outside_mpi(const char* what, const char* why = kPlanNeedsMpi);

// Empty for an intracommunicator; for an intercommunicator the error of `what`
// called over it (redist's calls are collective over the ranks of one group;
// two groups joined by an intercommunicator: make_group_plan, docs/groups.md).
// Local: every rank that passed the intercommunicator gets the same message.
std::string intercomm_problem(MPI_Comm comm, const char* what);

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
// differing item: "<what> between ranks: rank 0 has '...', rank R has '...'; <advice>"
// (a redist::MismatchError).
void agree_same(MPI_Comm comm, const std::vector<Same>& items, const char* advice);
// What agree_same's message shows of two values: where both are lists of
// key=value words with the same keys in order (options), only the words that
// differ; else both whole.
std::pair<std::string, std::string> differing_words(const std::string& a, const std::string& b);

// MPI return codes (docs/strategies.md, "Faults"). The plan's communicator
// returns errors (MPI_ERRORS_RETURN) instead of aborting; every call on it is
// checked, and a failure throws redist::MpiError (local, not agreed) whose
// message names this rank, the call, the peer where known and MPI's text:
//   "redist: rank 1: MPI_Waitsome failed (receive from rank 0): MPI_ERR_TRUNCATE: message truncated"
// The rank is this process's in `comm` (MPI_COMM_WORLD's when comm is null).
[[noreturn]] void mpi_failed(int code, const char* call, MPI_Comm comm, const std::string& peer);

// Throws redist::MpiError naming the MPI call when rc is not MPI_SUCCESS;
// `role` and `peer` name the other side ("receive from", 3).
inline void check_mpi(int rc, const char* call, MPI_Comm comm = MPI_COMM_NULL) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    mpi_failed(rc, call, comm, {});
}
void check_mpi(int rc, const char* call, MPI_Comm comm, const char* role, int peer);

// For the calls that complete several requests and fill statuses (MPI_Waitsome,
// MPI_Waitall, MPI_Testsome): on MPI_ERR_IN_STATUS the first failed status
// decides the message, and describe(i), i the request's index in the array
// waited on, names its peer ("receive from rank 0"). `status` holds `n` entries;
// `index` (Waitsome's, Testsome's) maps entry j to its request, null for Waitall.
// `n` is a reference so that check_wait(MPI_Waitsome(.., &count, ..), .., count, ..)
// reads the count the call wrote (arguments are evaluated in no fixed order).
template <class Describe>
void check_wait(int rc, const char* call, MPI_Comm comm, const MPI_Status* status, const int& n, const int* index,
                Describe&& describe) {
  if (rc == MPI_SUCCESS) [[likely]]
    return;
  if (rc == MPI_ERR_IN_STATUS)
    for (int j = 0; j < n; ++j) {
      const int e = status[j].MPI_ERROR;
      if (e != MPI_SUCCESS && e != MPI_ERR_PENDING) mpi_failed(e, call, comm, describe(index ? index[j] : j));
    }
  mpi_failed(rc, call, comm, {});
}

}  // namespace redist::detail
