// Point-to-point executors: `p2p` (one message per peer) and `segment` (one
// message per segment; "per patch" in paper 003). Both post every receive first,
// pack and send peer by peer in distance order, copy local pieces while messages
// fly, and unpack each message as it completes.
#include "copy.hpp"
#include "plan_impl.hpp"

namespace redist {
namespace {
constexpr int kTag = 7;  // one tag: per-pair message order is MPI's non-overtaking order

MPI_Request* request_array(PlanImpl& p, size_t n) {
  if (p.requests.size() < n) {
    p.requests.resize(n);
    p.done_index.resize(n);
  }
  return p.requests.data();
}
}  // namespace

// Copy phases stream (detail::kStreamAbove) when the whole phase of this execute
// is large: all local copies, all packing, all unpacking of this rank.
void copy_locals(const PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const bool stream = detail::stream_for(p.rp.stats.bytes_local);
  for (const LocalCopy& c : p.rp.locals)
    detail::copy_box(c.shape, es, src.at(c.from, es), c.from.strides, dst.at(c.to, es), c.to.strides, stream);
  if (stream) detail::stream_fence();
}

void pack_peer(const PlanImpl& p, int i, const SrcBlocks& src, std::byte* buf) {
  const index_t es = p.rp.elem_size;
  const bool stream = detail::stream_for(p.rp.stats.bytes_sent);
  for (const Segment& s : p.rp.sends[i].segments) {
    detail::copy_box(s.shape, es, src.at(s.at, es), s.at.strides, buf, detail::packed_strides(s.shape), stream);
    buf += s.shape.volume() * es;
  }
  if (stream) detail::stream_fence();
}

void unpack_peer(const PlanImpl& p, int i, const std::byte* buf, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const bool stream = detail::stream_for(p.rp.stats.bytes_received);
  for (const Segment& s : p.rp.receives[i].segments) {
    detail::copy_box(s.shape, es, buf, detail::packed_strides(s.shape), dst.at(s.at, es), s.at.strides, stream);
    buf += s.shape.volume() * es;
  }
  if (stream) detail::stream_fence();
}

void run_p2p(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  const size_t nr = p.recv_chunks.size(), ns = p.send_chunks.size();
  MPI_Request* req = request_array(p, nr + ns);
  std::byte* rbuf = p.recv_buffer();
  std::byte* sbuf = p.send_buffer();
  p.pending.assign(p.rp.receives.size(), 0);
  for (size_t c = 0; c < nr; ++c) {
    const Chunk& k = p.recv_chunks[c];
    ++p.pending[k.peer_index];
    check_mpi(MPI_Irecv(rbuf + k.offset, static_cast<int>(k.bytes), MPI_BYTE, k.peer, kTag, p.comm, &req[c]),
              "MPI_Irecv");
  }
  // Pack a peer, then send its chunks at once: packing the next peer overlaps the wire.
  size_t c = 0;
  for (size_t i = 0; i < p.rp.sends.size(); ++i) {
    pack_peer(p, static_cast<int>(i), src, sbuf + p.send_offset[i]);
    for (; c < ns && p.send_chunks[c].peer_index == static_cast<int>(i); ++c) {
      const Chunk& k = p.send_chunks[c];
      check_mpi(MPI_Isend(sbuf + k.offset, static_cast<int>(k.bytes), MPI_BYTE, k.peer, kTag, p.comm,
                          &req[nr + c]),
                "MPI_Isend");
    }
  }
  copy_locals(p, src, dst);
  for (size_t left = nr; left > 0;) {
    int count = 0;
    check_mpi(MPI_Waitsome(static_cast<int>(nr), req, &count, p.done_index.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitsome");
    for (int j = 0; j < count; ++j) {
      const int i = p.recv_chunks[p.done_index[j]].peer_index;
      if (--p.pending[i] == 0) unpack_peer(p, i, rbuf + p.recv_offset[i], dst);
    }
    left -= static_cast<size_t>(count);
  }
  check_mpi(MPI_Waitall(static_cast<int>(ns), req + nr, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

namespace {
// Walks the messages of one direction of the segment executor in order: every
// segment, split above max_message_bytes. `buf` is the segment's offset in the
// packed buffer, `off` the message's offset within the segment.
struct MessageCursor {
  const std::vector<PeerPlan>* peers;
  index_t es, max;
  size_t peer = 0, seg = 0, flat = 0;  // flat: segment number over all peers
  index_t off = 0, buf = 0;
  bool done() const { return peer >= peers->size(); }
  const Segment& segment() const { return (*peers)[peer].segments[seg]; }
  index_t bytes() const { return std::min(max, segment().elements() * es - off); }
  void next() {
    off += max;
    if (off < segment().elements() * es) return;
    buf += segment().elements() * es;
    off = 0;
    ++flat;
    if (++seg == (*peers)[peer].segments.size()) seg = 0, ++peer;
  }
};
}  // namespace

// One message per segment, at most kWindow receives and kWindow sends in flight:
// with every message posted at once, Open MPI's cost per message grew from 0.2 us
// (16 in flight) to 7 us (16,384), and 20,000 segments of 800 bytes took 3.5x as
// long as pdgemr2d. A finished slot is refilled at once; each segment is unpacked
// when its last message lands.
void run_segment(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  constexpr int kWindow = kSegmentWindow;
  const index_t es = p.rp.elem_size;
  const index_t max = p.options.max_message_bytes;
  MPI_Request* req = request_array(p, 2 * kWindow);
  std::byte* rbuf = p.recv_buffer();
  std::byte* sbuf = p.send_buffer();
  MessageCursor rc{&p.rp.receives, es, max}, sc{&p.rp.sends, es, max};
  const bool stream_out = detail::stream_for(p.rp.stats.bytes_sent);
  const bool stream_in = detail::stream_for(p.rp.stats.bytes_received);
  // Per receive slot: its segment (flat number) and place in the receive buffer.
  struct Slot {
    const Segment* seg = nullptr;
    index_t flat = 0, buf = 0;
  };
  Slot slot[kWindow];
  p.pending.clear();  // per receive segment: its messages still in flight (1 unless split)
  for (const PeerPlan& pp : p.rp.receives)
    for (const Segment& g : pp.segments) p.pending.push_back((g.elements() * es + max - 1) / max);
  auto post_recv = [&](int i) {
    slot[i] = {&rc.segment(), static_cast<index_t>(rc.flat), rc.buf};
    check_mpi(MPI_Irecv(rbuf + rc.buf + rc.off, static_cast<int>(rc.bytes()), MPI_BYTE, p.rp.receives[rc.peer].peer,
                        kTag, p.comm, &req[i]),
              "MPI_Irecv");
    rc.next();
  };
  auto post_send = [&](int i) {
    const Segment& g = sc.segment();
    if (sc.off == 0) {
      detail::copy_box(g.shape, es, src.at(g.at, es), g.at.strides, sbuf + sc.buf, detail::packed_strides(g.shape),
                       stream_out);
      if (stream_out) detail::stream_fence();
    }
    check_mpi(MPI_Isend(sbuf + sc.buf + sc.off, static_cast<int>(sc.bytes()), MPI_BYTE, p.rp.sends[sc.peer].peer,
                        kTag, p.comm, &req[kWindow + i]),
              "MPI_Isend");
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
    check_mpi(MPI_Waitsome(2 * kWindow, req, &count, p.done_index.data(), MPI_STATUSES_IGNORE), "MPI_Waitsome");
    if (count == MPI_UNDEFINED) break;
    active -= count;
    for (int j = 0; j < count; ++j) {
      const int i = p.done_index[j];
      if (i < kWindow) {
        const Slot& s = slot[i];
        if (--p.pending[static_cast<size_t>(s.flat)] == 0)
          detail::copy_box(s.seg->shape, es, rbuf + s.buf, detail::packed_strides(s.seg->shape), dst.at(s.seg->at, es),
                           s.seg->at.strides, stream_in);
        if (!rc.done()) post_recv(i), ++active;
      } else if (!sc.done()) {
        post_send(i - kWindow), ++active;
      }
    }
  }
  if (stream_in) detail::stream_fence();
}

}  // namespace redist
