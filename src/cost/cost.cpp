#include "redist/cost.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace redist {

double achieved_bandwidth(index_t max_remote_bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(max_remote_bytes) / seconds : 0;
}

double bound_bandwidth(const Machine& m, index_t remote, index_t local) {
  if (remote <= 0 || m.bnet <= 0 || m.bmemcpy <= 0) return 0;
  const double r = static_cast<double>(local) / static_cast<double>(remote);
  return m.bnet * m.bmemcpy / ((2 + r) * m.bnet + m.bmemcpy);
}

Machine quick_calibrate(MPI_Comm comm, index_t message_bytes) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double fig[2] = {0, 0};
  const index_t n = std::clamp<index_t>(message_bytes, 8, index_t{64} << 20);
  if (size >= 2 && rank <= 1) {
    std::vector<char> buf(static_cast<size_t>(n), 1);
    std::vector<double> t;
    const int peer = 1 - rank;
    for (int i = 0; i < 7; ++i) {  // the first round trip is a warm-up (first touch)
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf.data(), static_cast<int>(n), MPI_BYTE, peer, 0, comm);
        MPI_Recv(buf.data(), static_cast<int>(n), MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), static_cast<int>(n), MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(n), MPI_BYTE, peer, 0, comm);
      }
      if (i) t.push_back((MPI_Wtime() - t0) / 2);
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    fig[0] = static_cast<double>(n) / t[t.size() / 2];
  }
  if (rank == 0) {
    const size_t bytes = size_t{64} << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    std::vector<double> t;
    for (int i = 0; i < 4; ++i) {
      const double t0 = MPI_Wtime();
      std::memcpy(b.data(), a.data(), bytes);
      t.push_back(MPI_Wtime() - t0);
      a[static_cast<size_t>(i)] = b[static_cast<size_t>(i) + 1];  // keep the copies observable
    }
    fig[1] = static_cast<double>(bytes) / *std::min_element(t.begin() + 1, t.end());
  }
  MPI_Bcast(fig, 2, MPI_DOUBLE, 0, comm);
  return Machine{fig[0], fig[1]};
}

}  // namespace redist
