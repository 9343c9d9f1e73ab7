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

void copy_locals(const PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  for (const LocalCopy& c : p.rp.locals)
    detail::copy_box(c.shape, es, src.at(c.from, es), c.from.strides, dst.at(c.to, es), c.to.strides);
}

void pack_peer(const PlanImpl& p, int i, const SrcBlocks& src, std::byte* buf) {
  const index_t es = p.rp.elem_size;
  for (const Segment& s : p.rp.sends[i].segments) {
    detail::copy_box(s.shape, es, src.at(s.at, es), s.at.strides, buf, detail::packed_strides(s.shape));
    buf += s.shape.volume() * es;
  }
}

void unpack_peer(const PlanImpl& p, int i, const std::byte* buf, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  for (const Segment& s : p.rp.receives[i].segments) {
    detail::copy_box(s.shape, es, buf, detail::packed_strides(s.shape), dst.at(s.at, es), s.at.strides);
    buf += s.shape.volume() * es;
  }
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

void run_segment(PlanImpl& p, const SrcBlocks& src, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const index_t max = p.options.max_message_bytes;
  // Messages: every segment, split further only above max_message_bytes.
  auto count_msgs = [&](const std::vector<PeerPlan>& peers) {
    size_t n = 0;
    for (const PeerPlan& pp : peers)
      for (const Segment& s : pp.segments) n += static_cast<size_t>((s.elements() * es + max - 1) / max);
    return n;
  };
  const size_t nr = count_msgs(p.rp.receives), ns = count_msgs(p.rp.sends);
  MPI_Request* req = request_array(p, nr + ns);
  std::byte* rbuf = p.recv_buffer();
  std::byte* sbuf = p.send_buffer();
  size_t r = 0;
  index_t off = 0, flat = 0;
  for (const PeerPlan& pp : p.rp.receives)
    for (const Segment& s : pp.segments) {
      const index_t bytes = s.elements() * es;
      for (index_t o = 0; o < bytes; o += max, ++r) {
        check_mpi(MPI_Irecv(rbuf + off + o, static_cast<int>(std::min(max, bytes - o)), MPI_BYTE, pp.peer,
                            kTag, p.comm, &req[r]),
                  "MPI_Irecv");
      }
      off += bytes;
      ++flat;
    }
  size_t q = nr;
  off = 0;
  for (const PeerPlan& pp : p.rp.sends)
    for (const Segment& s : pp.segments) {
      const index_t bytes = s.elements() * es;
      detail::copy_box(s.shape, es, src.at(s.at, es), s.at.strides, sbuf + off, detail::packed_strides(s.shape));
      for (index_t o = 0; o < bytes; o += max, ++q)
        check_mpi(MPI_Isend(sbuf + off + o, static_cast<int>(std::min(max, bytes - o)), MPI_BYTE, pp.peer,
                            kTag, p.comm, &req[q]),
                  "MPI_Isend");
      off += bytes;
    }
  copy_locals(p, src, dst);
  // A segment larger than max_message_bytes arrives in several messages: then wait
  // for everything and unpack in order; otherwise unpack each segment as it lands.
  const bool split = nr != static_cast<size_t>(flat);
  if (split) {
    check_mpi(MPI_Waitall(static_cast<int>(nr), req, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (size_t i = 0; i < p.rp.receives.size(); ++i)
      unpack_peer(p, static_cast<int>(i), rbuf + p.recv_offset[i], dst);
  } else {
    // Request k receives segment k: its place in the plan and the buffer (built once).
    if (p.seg_ptr.size() != nr) {
      p.seg_ptr.clear();
      p.seg_off.clear();
      index_t o = 0;
      for (const PeerPlan& pp : p.rp.receives)
        for (const Segment& s : pp.segments) {
          p.seg_ptr.push_back(&s);
          p.seg_off.push_back(o);
          o += s.elements() * es;
        }
    }
    for (size_t left = nr; left > 0;) {
      int count = 0;
      check_mpi(MPI_Waitsome(static_cast<int>(nr), req, &count, p.done_index.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitsome");
      for (int j = 0; j < count; ++j) {
        const int k = p.done_index[j];
        const Segment& s = *p.seg_ptr[k];
        detail::copy_box(s.shape, es, rbuf + p.seg_off[k], detail::packed_strides(s.shape), dst.at(s.at, es),
                         s.at.strides);
      }
      left -= static_cast<size_t>(count);
    }
  }
  check_mpi(MPI_Waitall(static_cast<int>(ns), req + nr, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

}  // namespace redist
