// `p2p`: one message per peer ("per rank" in paper 003). Post every receive
// first, pack and send peer by peer in distance order (packing the next peer
// overlaps the wire), copy local pieces while messages fly, unpack each message
// as it completes. Messages above Options::max_message_bytes go as several.
// A message that is one run of storage on its side (cost/model.hpp,
// storage_run) is sent from the source, or received into the target (without
// Options::arithmetic), as it is: no packing, no unpacking, and no room in the
// packed buffers (extra_bytes counts the other messages).
#include "exec/pack.hpp"
#include "exec/threads.hpp"
#include "cost/model.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr int kTag = 7;  // one tag: per-pair message order is MPI's non-overtaking order

// One MPI message of at most max_message_bytes: part of a peer's data.
struct Chunk {
  int peer_index;  // into RankPlan::sends or ::receives
  int peer;
  index_t offset;  // bytes, into the packed buffer
  index_t bytes;
};

std::vector<Chunk> chunk_peers(const std::vector<PeerPlan>& peers, const std::vector<index_t>& offsets, index_t max) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < peers.size(); ++i)
    for (index_t off = 0; off < peers[i].bytes; off += max)
      chunks.push_back({static_cast<int>(i), peers[i].peer, offsets[i] + off, std::min(max, peers[i].bytes - off)});
  return chunks;
}

class P2p final : public Strategy {
 public:
  explicit P2p(PlanCore& p)
      : Strategy(p),
        send_run_(send_runs(p)),
        recv_run_(receive_runs(p)),
        send_at_(packed_offsets(p.rp.sends, send_run_, send_bytes_)),
        recv_at_(packed_offsets(p.rp.receives, recv_run_, recv_bytes_)),
        send_chunks_(chunk_peers(p.rp.sends, send_at_, p.options.max_message_bytes)),
        recv_chunks_(chunk_peers(p.rp.receives, recv_at_, p.options.max_message_bytes)),
        requests_(send_chunks_.size() + recv_chunks_.size()),
        done_(requests_.size()),
        status_(requests_.size()),
        pending_(p.rp.receives.size()) {}

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    PlanCore& p = plan_;
    const size_t nr = recv_chunks_.size(), ns = send_chunks_.size();
    MPI_Request* req = requests_.data();
    std::byte* rbuf = p.recv_scratch(recv_bytes_);  // extra_bytes' figure (p2p_packed_bytes)
    std::byte* sbuf = p.send_scratch(send_bytes_);
    std::fill(pending_.begin(), pending_.end(), 0);
    for (size_t c = 0; c < nr; ++c) {
      const Chunk& k = recv_chunks_[c];
      const auto i = static_cast<size_t>(k.peer_index);
      ++pending_[k.peer_index];
      std::byte* to = message_in(p, dst, recv_run_[i], rbuf + recv_at_[i]) + (k.offset - recv_at_[i]);
      check_mpi(MPI_Irecv(to, static_cast<int>(k.bytes), MPI_BYTE, k.peer, kTag, p.comm, &req[c]), "MPI_Irecv", p.comm,
                "receive from", k.peer);
    }
    size_t c = 0;
    for (size_t i = 0; i < p.rp.sends.size(); ++i) {
      const std::byte* out = message_out(p, static_cast<int>(i), src, send_run_[i], sbuf + send_at_[i]);
      for (; c < ns && send_chunks_[c].peer_index == static_cast<int>(i); ++c) {
        const Chunk& k = send_chunks_[c];
        check_mpi(MPI_Isend(out + (k.offset - send_at_[i]), static_cast<int>(k.bytes), MPI_BYTE, k.peer, kTag,
                            p.comm, &req[nr + c]),
                  "MPI_Isend", p.comm, "send to", k.peer);
      }
    }
    copy_locals(p, src, dst);
    for (size_t left = nr; left > 0;) {
      int count = 0;
      check_wait(wait_some(p, static_cast<int>(nr), req, &count, done_.data(), status_.data()), "MPI_Waitsome", p.comm,
                 status_.data(), count, done_.data(),
                 [&](int i) { return cat("receive from rank ", recv_chunks_[i].peer); });
      for (int j = 0; j < count; ++j) {
        const int i = recv_chunks_[done_[j]].peer_index;
        if (--pending_[i] == 0 && recv_run_[static_cast<size_t>(i)].block < 0)
          unpack_peer(p, i, rbuf + recv_at_[static_cast<size_t>(i)], dst);
      }
      left -= static_cast<size_t>(count);
    }
    check_wait(wait_all(p, static_cast<int>(ns), req + nr, status_.data()), "MPI_Waitall", p.comm, status_.data(),
               static_cast<int>(ns), nullptr, [&](int i) { return cat("send to rank ", send_chunks_[i].peer); });
  }

 private:
  std::vector<StorageRun> send_run_, recv_run_;  // per peer: its message as one run of storage, if it is
  index_t send_bytes_ = 0, recv_bytes_ = 0;      // the packed buffers: the other messages
  std::vector<index_t> send_at_, recv_at_;       // per peer: its offset in the packed buffer
  std::vector<Chunk> send_chunks_, recv_chunks_;
  std::vector<MPI_Request> requests_;
  std::vector<int> done_;
  std::vector<MPI_Status> status_;  // of the requests completed by one wait (errors name their peer)
  std::vector<index_t> pending_;  // per receive peer: its chunks still in flight
};

// T_comm = max(sum_send x(bytes_peer), sum_recv x(bytes_peer)), x(n) the measured
// exchange of n bytes each way (paper 002 Eq. 1 with t_w read from the curve);
// T_memcpy = pack(send rows) + unpack(receive rows) + local copies, without the
// messages that are one run of storage (sent and received as they are).
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, true);
  Prediction p;
  p.comm = std::max(message_time(rp.sends, m), message_time(rp.receives, m));
  p.memcpy = p2p_copy_time(rp, rt);
  return p;
}

}  // namespace

StrategyEntry p2p_strategy() {
  StrategyEntry e = entry<P2p>("p2p", "one message per peer: receives posted first, unpacked as each arrives", predict);
  e.arithmetic = true;
  e.extra_bytes = [](const RankPlan& rp, index_t, bool arithmetic) {
    return p2p_packed_bytes(rp, arithmetic);
  };
  return e;
}

}  // namespace redist::detail
