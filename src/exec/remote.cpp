#include "exec/remote.hpp"

#include <algorithm>

#include "mpi/agree.hpp"

namespace redist::detail {

SenderView sender_view(const std::int64_t* w, int ndim) {
  SenderView v{w[0], w[1], {w[3], w[4]}, {}};
  for (int d = 0; d < ndim; ++d) v.strides[d] = w[5 + d];
  return v;
}

std::int64_t record_blocks(const std::vector<std::int64_t>& records, int ndim) {
  std::int64_t n = 0;
  for (size_t k = 0; k < records.size(); k += record_size(ndim)) n = std::max(n, records[k] + 1);
  return n;
}

std::vector<size_t> from_next(const std::vector<PeerPlan>& peers, int rank, int size) {
  std::vector<size_t> order(peers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto distance = [&](size_t i) { return (peers[i].peer - rank + size) % size; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return distance(a) < distance(b); });
  return order;
}

std::int64_t segment_blocks(const std::vector<Segment>& segments) {
  std::int64_t n = 0;
  for (const Segment& s : segments) n = std::max<std::int64_t>(n, s.at.block + 1);
  return n;
}

std::vector<std::vector<std::int64_t>> exchange_records(PlanCore& p, const std::vector<char>& with, int tag,
                                                        Teller who) {
  const int n = p.rp.ndim;
  const size_t per = record_size(n);
  const std::vector<PeerPlan>& tell = who == Teller::senders ? p.rp.sends : p.rp.receives;
  const std::vector<PeerPlan>& hear = who == Teller::senders ? p.rp.receives : p.rp.sends;
  std::vector<std::vector<std::int64_t>> out(tell.size()), where(hear.size());
  std::vector<MPI_Request> req;
  std::vector<std::string> role;  // of each request, for errors
  for (size_t i = 0; i < hear.size(); ++i) {
    const int peer = hear[i].peer;
    if (!with[static_cast<size_t>(peer)]) continue;
    where[i].resize(hear[i].segments.size() * per);
    req.emplace_back();
    role.push_back(cat("receive from rank ", peer));
    check_mpi(MPI_Irecv(where[i].data(), static_cast<int>(where[i].size()), MPI_INT64_T, peer, tag, p.comm,
                        &req.back()),
              "MPI_Irecv", p.comm, "receive from", peer);
  }
  for (size_t i = 0; i < tell.size(); ++i) {
    const int peer = tell[i].peer;
    if (!with[static_cast<size_t>(peer)]) continue;
    for (const Segment& s : tell[i].segments) {
      out[i].push_back(s.at.block);
      out[i].push_back(s.at.offset);
      out[i].push_back(s.run);
      out[i].push_back(s.step[0]);
      out[i].push_back(s.step[1]);
      for (int d = 0; d < n; ++d) out[i].push_back(s.at.strides[d]);
    }
    req.emplace_back();
    role.push_back(cat("send to rank ", peer));
    check_mpi(MPI_Isend(out[i].data(), static_cast<int>(out[i].size()), MPI_INT64_T, peer, tag, p.comm, &req.back()),
              "MPI_Isend", p.comm, "send to", peer);
  }
  std::vector<MPI_Status> status(req.size());
  check_wait(MPI_Waitall(static_cast<int>(req.size()), req.data(), status.data()), "MPI_Waitall", p.comm,
             status.data(), static_cast<int>(req.size()), nullptr, [&](int i) { return role[static_cast<size_t>(i)]; });
  return where;
}

}  // namespace redist::detail
