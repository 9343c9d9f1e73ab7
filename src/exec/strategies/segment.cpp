// `segment`: one message per run of segments (per segment where the plan has
// no repetition: "per patch" in paper 003), at most kWindow
// receives and kWindow sends in flight: with every message posted at once, Open
// MPI's cost per message grew from 0.2 us (16 in flight) to 7 us (16,384), and
// 20,000 segments of 800 bytes took 3.5x as long as pdgemr2d. A finished slot is
// refilled at once; each segment is unpacked when its last message lands. A
// segment that is one run of storage (cost/model.hpp, one_run) is sent from the
// source, or received into the target (without Options::arithmetic), as it is.
#include "cost/model.hpp"
#include "exec/pack.hpp"
#include "kernels/copy.hpp"
#include "mpi/agree.hpp"

namespace redist::detail {
namespace {

constexpr int kTag = 7;
constexpr int kWindow = 64;  // messages in flight each way (the model charges this depth)

// Walks the messages of one direction in order: every segment, split above
// max_message_bytes. `buf` is the segment's offset in the packed buffer (where
// only the segments that are not moved in place take room), `off` the message's
// offset within the segment.
struct MessageCursor {
  const std::vector<PeerPlan>* peers;
  index_t es, max;
  const std::vector<char>* in_place;  // per segment (flat): moved in place (SegmentStrategy::in_place)
  size_t peer = 0, seg = 0, flat = 0;  // flat: segment number over all peers
  index_t off = 0, buf = 0;
  bool done() const { return peer >= peers->size(); }
  const Segment& segment() const { return (*peers)[peer].segments[seg]; }
  bool run() const { return (*in_place)[flat] != 0; }
  index_t bytes() const { return std::min(max, segment().elements() * es - off); }
  void next() {
    off += max;
    if (off < segment().elements() * es) return;
    if (!run()) buf += segment().elements() * es;
    off = 0;
    ++flat;
    if (++seg == (*peers)[peer].segments.size()) seg = 0, ++peer;
  }
};

class SegmentStrategy final : public Strategy {
 public:
  explicit SegmentStrategy(PlanCore& p) : Strategy(p) {
    const index_t es = p.rp.elem_size, max = p.options.max_message_bytes;
    for (const PeerPlan& pp : p.rp.receives)
      for (const Segment& g : pp.segments) messages_.push_back((g.elements() * es + max - 1) / max);
    pending_.resize(messages_.size());
    const bool arithmetic = arithmetic_of(p) != nullptr;  // applied while unpacking: nothing received in place
    recv_in_place_ = in_place(p.rp.receives, !arithmetic), send_in_place_ = in_place(p.rp.sends, true);
    recv_bytes_ = segment_packed_bytes(p.rp.receives, es, arithmetic);
    send_bytes_ = segment_packed_bytes(p.rp.sends, es);
  }

  void run(const SrcBlocks& src, const DstBlocks& dst) override {
    PlanCore& p = plan_;
    const index_t es = p.rp.elem_size;
    const index_t max = p.options.max_message_bytes;
    MPI_Request* req = requests_;
    std::byte* rbuf = p.recv_scratch(recv_bytes_);  // extra_bytes' figure
    std::byte* sbuf = p.send_scratch(send_bytes_);
    MessageCursor rc{&p.rp.receives, es, max, &recv_in_place_}, sc{&p.rp.sends, es, max, &send_in_place_};
    const bool stream_out = stream_for(p.rp.stats.bytes_sent);
    const bool stream_in = stream_for(p.rp.stats.bytes_received);
    std::copy(messages_.begin(), messages_.end(), pending_.begin());
    auto post_recv = [&](int i) {
      const int from = p.rp.receives[rc.peer].peer;
      const Segment& g = rc.segment();
      const bool run = rc.run();
      slot_[i] = {&g, static_cast<index_t>(rc.flat), rc.buf, from, run};
      std::byte* to = run ? dst.at(g.at, es) + rc.off : rbuf + rc.buf + rc.off;
      check_mpi(MPI_Irecv(to, static_cast<int>(rc.bytes()), MPI_BYTE, from, kTag, p.comm, &req[i]), "MPI_Irecv",
                p.comm, "receive from", from);
      rc.next();
    };
    auto post_send = [&](int i) {
      const Segment& g = sc.segment();
      const bool run = sc.run();
      if (sc.off == 0 && !run) {
        pack_run(g, src.at(g.at, es), sbuf + sc.buf, es, stream_out);
        if (stream_out) stream_fence();
      }
      const int to = p.rp.sends[sc.peer].peer;
      send_peer_[i] = to;
      const std::byte* from = run ? src.at(g.at, es) + sc.off : sbuf + sc.buf + sc.off;
      check_mpi(MPI_Isend(from, static_cast<int>(sc.bytes()), MPI_BYTE, to, kTag, p.comm, &req[kWindow + i]),
                "MPI_Isend", p.comm, "send to", to);
      sc.next();
    };
    int active = 0;
    for (int i = 0; i < kWindow; ++i) {
      req[i] = req[kWindow + i] = MPI_REQUEST_NULL;
      if (!rc.done()) post_recv(i), ++active;
    }
    for (int i = 0; i < kWindow && !sc.done(); ++i) post_send(i), ++active;
    copy_locals(p, src, dst);
    while (active > 0) {
      int count = 0;
      check_wait(MPI_Waitsome(2 * kWindow, req, &count, done_, status_), "MPI_Waitsome", p.comm, status_, count, done_,
                 [&](int i) {
                   return i < kWindow ? cat("receive from rank ", slot_[i].peer)
                                      : cat("send to rank ", send_peer_[i - kWindow]);
                 });
      if (count == MPI_UNDEFINED) break;
      active -= count;
      for (int j = 0; j < count; ++j) {
        const int i = done_[j];
        if (i < kWindow) {
          const Slot& s = slot_[i];
          if (--pending_[static_cast<size_t>(s.flat)] == 0 && !s.in_place)
            unpack_run(*s.seg, rbuf + s.buf, dst.at(s.seg->at, es), es, stream_in, arithmetic_of(p));
          if (!rc.done()) post_recv(i), ++active;
        } else if (!sc.done()) {
          post_send(i - kWindow), ++active;
        }
      }
    }
    if (stream_in) stream_fence();
  }

 private:
  // Per receive slot: its segment (flat number) and place in the receive buffer.
  struct Slot {
    const Segment* seg = nullptr;
    index_t flat = 0, buf = 0;
    int peer = -1;
    bool in_place = false;  // received into the target (one_run): nothing to unpack
  };
  Slot slot_[kWindow];
  int send_peer_[kWindow] = {};  // per send slot: its peer (for error messages)
  MPI_Request requests_[2 * kWindow];
  int done_[2 * kWindow];
  MPI_Status status_[2 * kWindow];
  std::vector<index_t> messages_;  // per receive segment: its messages (1 unless split)
  std::vector<index_t> pending_;   // the same, counted down in a run
  index_t send_bytes_ = 0, recv_bytes_ = 0;  // the packed buffers: segments not moved in place
  std::vector<char> send_in_place_, recv_in_place_;  // per segment (flat): one run of storage, moved in place

  // Per segment of `peers` (flat): is it moved in place (one_run, where `allowed`)?
  static std::vector<char> in_place(const std::vector<PeerPlan>& peers, bool allowed) {
    std::vector<char> v;
    for (const PeerPlan& pp : peers)
      for (const Segment& g : pp.segments) v.push_back(allowed && one_run(g));
    return v;
  }
};

// As p2p, plus each of its n messages' share of a stream of n: n * s(min(n, 64)),
// s(k) the measured cost per message with k in flight each way; no copy for a
// segment that is one run of storage.
Prediction predict(const RankPlan& rp, const Machine& m) {
  const Rates rt = rates(rp, m, true);
  auto side = [&](const std::vector<PeerPlan>& peers) {
    const index_t n = segment_count(peers);
    return message_time(peers, m) + static_cast<double>(n) * stream_cost(m, std::min<index_t>(n, kWindow));
  };
  Prediction p;
  p.comm = std::max(side(rp.sends), side(rp.receives));
  p.memcpy = segment_copy_time(rp, rt);  // segments that are one run move in place
  return p;
}

}  // namespace

StrategyEntry segment_strategy() {
  StrategyEntry e = entry<SegmentStrategy>("segment", "one message per segment, at most 64 in flight each way", predict);
  e.arithmetic = true;
  e.extra_bytes = [](const RankPlan& rp, index_t, bool arithmetic) {
    return segment_packed_bytes(rp.sends, rp.elem_size) + segment_packed_bytes(rp.receives, rp.elem_size, arithmetic);
  };
  return e;
}

}  // namespace redist::detail
