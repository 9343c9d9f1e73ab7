// Collective validation (ARCHITECTURE.md, "Validate collectively, fail cleanly").
#include "mpi/agree.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdint>
#include <functional>

#include "redist/error.hpp"

namespace redist::detail {

std::string outside_mpi(const char* what, const char* why) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);  // unchecked: no error handler exists before MPI_Init
  MPI_Finalized(&finalized);      // unchecked: nor after MPI_Finalize
  if (initialized && !finalized) return {};
  return std::string("redist: ") + what + (finalized ? " after MPI_Finalize" : " before MPI_Init") + ": " + why;
}

std::string intercomm_problem(MPI_Comm comm, const char* what) {
  int inter = 0;
  if (comm == MPI_COMM_NULL) return {};  // the caller's own message
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || !inter) return {};  // unchecked: a bad handle fails later, checked
  return std::string(what) +
         ": comm is an intercommunicator: the calls are collective over one group's ranks (an intracommunicator); "
         "to move between two groups joined by an intercommunicator use make_group_plan (docs/groups.md)";
}

// Already on the error path: its own calls are unchecked, with fallbacks.
void mpi_failed(int code, const char* call, MPI_Comm comm, const std::string& peer) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0, cls = code, rank = -1;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)  // unchecked: error path
    len = std::snprintf(text, sizeof text, "MPI error code %d", code);
  MPI_Error_class(code, &cls);  // unchecked: error path (cls stays the code)
  // unchecked: error path (the world's rank when the communicator has none)
  if (comm == MPI_COMM_NULL || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(cat("redist: rank ", rank, ": ", call, " failed", peer.empty() ? "" : " (" + peer + ")", ": ",
                     std::string(text, static_cast<size_t>(len))),
                 cls);
}

void check_mpi(int rc, const char* call, MPI_Comm comm, const char* role, int peer) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    mpi_failed(rc, call, comm, cat(role, " rank ", peer));
}

void agree(MPI_Comm comm, const std::string& local_error, bool mismatch) {
  int rank;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  int mine = local_error.empty() ? INT_MAX : rank, first = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
  if (first == INT_MAX) return;
  std::string msg = rank == first ? local_error : std::string();
  long long len = static_cast<long long>(msg.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, first, comm), "MPI_Bcast", comm);
  msg.resize(static_cast<size_t>(len));
  check_mpi(MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, first, comm), "MPI_Bcast", comm);
  msg = "redist: rank " + std::to_string(first) + ": " + msg;
  if (mismatch) throw MismatchError(msg);
  throw Error(msg);
}

namespace {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  for (size_t i = 0; i < s.size();) {
    const size_t j = std::min(s.find(' ', i), s.size());
    if (j > i) w.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return w;
}

}  // namespace

// Only the words that differ, so that the one setting that differs is not lost
// among the rest (agree.hpp).
std::pair<std::string, std::string> differing_words(const std::string& a, const std::string& b) {
  const std::vector<std::string> wa = words(a), wb = words(b);
  const auto key = [](const std::string& w) { return w.substr(0, w.find('=')); };
  bool keyed = wa.size() == wb.size() && !wa.empty();
  for (size_t i = 0; keyed && i < wa.size(); ++i)
    keyed = wa[i].find('=') != std::string::npos && wb[i].find('=') != std::string::npos && key(wa[i]) == key(wb[i]);
  if (!keyed) return {a, b};
  std::string da, db;
  for (size_t i = 0; i < wa.size(); ++i)
    if (wa[i] != wb[i]) da += (da.empty() ? "" : " ") + wa[i], db += (db.empty() ? "" : " ") + wb[i];
  return {da, db};
}

void agree_same(MPI_Comm comm, const std::vector<Same>& items, const char* advice) {
  int rank;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  const int n = static_cast<int>(items.size());
  std::vector<std::uint64_t> h(items.size()), h0(items.size());
  for (int i = 0; i < n; ++i) h[i] = h0[i] = std::hash<std::string>{}(items[i].value);
  check_mpi(MPI_Bcast(h0.data(), n, MPI_UINT64_T, 0, comm), "MPI_Bcast", comm);
  // Lowest differing rank and its first differing item, in one reduction.
  long long key = LLONG_MAX, first = LLONG_MAX;
  for (int i = 0; i < n && key == LLONG_MAX; ++i)
    if (h[i] != h0[i]) key = static_cast<long long>(rank) * n + i;
  check_mpi(MPI_Allreduce(&key, &first, 1, MPI_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce", comm);
  if (first == LLONG_MAX) return;
  const int who = static_cast<int>(first / n), item = static_cast<int>(first % n);
  std::string ref = items[item].value;
  long long len = static_cast<long long>(ref.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast", comm);
  ref.resize(static_cast<size_t>(len));
  check_mpi(MPI_Bcast(ref.data(), static_cast<int>(len), MPI_CHAR, 0, comm), "MPI_Bcast", comm);
  std::string err;
  if (rank == who) {
    const auto [mine, theirs] = differing_words(items[item].value, ref);
    err = cat(items[item].what, " between ranks: rank 0 has '", theirs, "', rank ", who, " has '", mine, "'; ", advice);
  }
  agree(comm, err, true);  // every rank gets here and throws `who`'s message
}

}  // namespace redist::detail
