// Collective validation (ARCHITECTURE.md, "Validate collectively, fail cleanly").
#include "mpi/agree.hpp"

#include <climits>

#include "redist/error.hpp"

namespace redist::detail {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(call, " failed: ", std::string(text, len));
}

void agree(MPI_Comm comm, const std::string& local_error) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int mine = local_error.empty() ? INT_MAX : rank, first = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == INT_MAX) return;
  std::string msg = rank == first ? local_error : std::string();
  long long len = static_cast<long long>(msg.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, first, comm), "MPI_Bcast");
  msg.resize(static_cast<size_t>(len));
  check_mpi(MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, first, comm), "MPI_Bcast");
  throw Error("redist: rank " + std::to_string(first) + ": " + msg);
}

}  // namespace redist::detail
