#include "exec/pack.hpp"

#include <span>
#include <vector>

#include "exec/threads.hpp"
#include "kernels/arith.hpp"
#include "kernels/copy.hpp"
#include "plan/pieces.hpp"

namespace redist::detail {

void pack_run(const Segment& s, const std::byte* from, std::byte* buf, index_t es, bool stream) {
  copy_run(s.shape, s.run, es, s.count, from, s.at.strides, s.step, buf, packed_strides(s.shape),
           packed_steps(s.shape, s.count), stream);
}

void unpack_run(const Segment& s, const std::byte* buf, std::byte* to, index_t es, bool stream, const Arithmetic* a) {
  if (a)
    return axpby_run(*a, s.shape, s.run, es, s.count, buf, packed_strides(s.shape), packed_steps(s.shape, s.count), to,
                     s.at.strides, s.step);
  copy_run(s.shape, s.run, es, s.count, buf, packed_strides(s.shape), packed_steps(s.shape, s.count), to,
           s.at.strides, s.step, stream);
}

void copy_local(const PlanCore& p, size_t k, const SrcBlocks& src, const DstBlocks& dst, bool stream) {
  const index_t es = p.rp.elem_size;
  const LocalCopy& c = p.rp.locals[k];
  if (const Arithmetic* a = arithmetic_of(p))
    axpby_run(*a, c.shape, c.run, es, c.count, src.at(c.from, es), c.from.strides, c.from_step, dst.at(c.to, es),
              c.to.strides, c.to_step);
  else
    copy_run(c.shape, c.run, es, c.count, src.at(c.from, es), c.from.strides, c.from_step, dst.at(c.to, es),
             c.to.strides, c.to_step, stream);
}

void copy_local_range(const PlanCore& p, size_t k, index_t a, index_t b, const SrcBlocks& src, const DstBlocks& dst,
                      bool stream) {
  const index_t es = p.rp.elem_size;
  const LocalCopy& c = p.rp.locals[k];
  const Arithmetic* ar = arithmetic_of(p);
  // The run as two Segments, one per side: for_range cuts both alike (same shape
  // and counts), so their pieces pair up in order.
  const Segment from{c.shape, c.from, c.run, c.count, c.from_step}, to{c.shape, c.to, c.run, c.count, c.to_step};
  thread_local std::vector<Segment> targets;
  targets.clear();
  for_range(std::span<const Segment>(&to, 1), a, b, [&](const Segment& t, index_t) { targets.push_back(t); });
  size_t i = 0;
  for_range(std::span<const Segment>(&from, 1), a, b, [&](const Segment& f, index_t) {
    const Segment& t = targets[i++];
    const index_t run = std::min(f.run, t.run);
    if (ar)
      axpby_run(*ar, f.shape, run, es, f.count, src.at(f.at, es), f.at.strides, f.step, dst.at(t.at, es), t.at.strides,
                t.step);
    else
      copy_run(f.shape, run, es, f.count, src.at(f.at, es), f.at.strides, f.step, dst.at(t.at, es), t.at.strides,
               t.step, stream);
  });
}

LocalParts::LocalParts(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst, index_t part, size_t first)
    : p_(p), src_(src), dst_(dst), part_(std::max<index_t>(1, part)), stream_(stream_for(p.rp.stats.bytes_local)),
      next_(first) {}

bool LocalParts::step() {
  if (next_ >= p_.rp.locals.size()) return false;
  const index_t n = p_.rp.locals[next_].elements(), end = std::min(n, at_ + part_);
  copy_local_range(p_, next_, at_, end, src_, dst_, stream_);
  if ((at_ = end) == n) ++next_, at_ = 0;
  return true;
}

void copy_locals(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst) {
  const bool stream = stream_for(p.rp.stats.bytes_local);
  const int parts = copy_parts(p, p.rp.stats.bytes_local);
  if (parts == 1) {
    for (size_t k = 0; k < p.rp.locals.size(); ++k) copy_local(p, k, src, dst, stream);
    if (stream) stream_fence();
    return;
  }
  // Part t: elements [part_begin(t), part_begin(t + 1)) of the local pieces one
  // after another; a piece inside one part whole, one cut by a part in ranges.
  const index_t total = p.rp.stats.bytes_local / p.rp.elem_size;
  for_parts(parts, [&](int t) {
    const index_t a = part_begin(total, t, parts, 1), b = part_begin(total, t + 1, parts, 1);
    index_t at = 0;  // the first element of locals[k]
    for (size_t k = 0; k < p.rp.locals.size() && at < b; ++k) {
      const index_t n = p.rp.locals[k].elements();
      if (at >= a && at + n <= b) copy_local(p, k, src, dst, stream);
      else if (at + n > a) copy_local_range(p, k, std::max(a, at) - at, std::min(b, at + n) - at, src, dst, stream);
      at += n;
    }
  });
}

void pack_peer(const PlanCore& p, int i, const SrcBlocks& src, std::byte* buf) {
  const index_t es = p.rp.elem_size;
  const index_t bytes = p.rp.sends[static_cast<size_t>(i)].bytes;
  if (const int parts = copy_parts(p, bytes); parts > 1) {
    for_parts(parts, [&](int t) {
      const index_t a = part_begin(bytes / es, t, parts, 1) * es, b = part_begin(bytes / es, t + 1, parts, 1) * es;
      pack_peer_range(p, i, src, a, b - a, buf + a);
    });
    return;
  }
  const bool stream = stream_for(p.rp.stats.bytes_sent);
  for (const Segment& s : p.rp.sends[i].segments) {
    pack_run(s, src.at(s.at, es), buf, es, stream);
    buf += s.elements() * es;
  }
  if (stream) stream_fence();
}

void unpack_peer(const PlanCore& p, int i, const std::byte* buf, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const index_t bytes = p.rp.receives[static_cast<size_t>(i)].bytes;
  if (const int parts = copy_parts(p, bytes); parts > 1) {
    for_parts(parts, [&](int t) {
      const index_t a = part_begin(bytes / es, t, parts, 1) * es, b = part_begin(bytes / es, t + 1, parts, 1) * es;
      unpack_peer_range(p, i, buf + a, a, b - a, dst);
    });
    return;
  }
  const bool stream = stream_for(p.rp.stats.bytes_received);
  const Arithmetic* a = arithmetic_of(p);
  for (const Segment& s : p.rp.receives[i].segments) {
    unpack_run(s, buf, dst.at(s.at, es), es, stream, a);
    buf += s.elements() * es;
  }
  if (stream) stream_fence();
}

std::vector<StorageRun> send_runs(const PlanCore& p) {
  std::vector<StorageRun> v;
  for (const PeerPlan& pp : p.rp.sends) v.push_back(storage_run(pp));
  return v;
}

std::vector<StorageRun> receive_runs(const PlanCore& p) {
  std::vector<StorageRun> v;
  for (const PeerPlan& pp : p.rp.receives) v.push_back(arithmetic_of(p) ? StorageRun{} : storage_run(pp));
  return v;
}

std::vector<index_t> packed_offsets(const std::vector<PeerPlan>& peers, const std::vector<StorageRun>& runs,
                                    index_t& total) {
  std::vector<index_t> at(peers.size());
  total = 0;
  for (size_t i = 0; i < peers.size(); ++i)
    if (runs[i].block < 0) at[i] = total, total += peers[i].bytes;
  return at;
}

const std::byte* message_out(const PlanCore& p, int i, const SrcBlocks& src, const StorageRun& run, std::byte* packed) {
  if (run.block >= 0)
    return static_cast<const std::byte*>(src.ptr[static_cast<size_t>(run.block)]) + run.offset * p.rp.elem_size;
  pack_peer(p, i, src, packed);
  return packed;
}

std::byte* message_in(const PlanCore& p, const DstBlocks& dst, const StorageRun& run, std::byte* packed) {
  if (run.block >= 0)
    return static_cast<std::byte*>(dst.ptr[static_cast<size_t>(run.block)]) + run.offset * p.rp.elem_size;
  return packed;
}

void pack_peer_range(const PlanCore& p, int i, const SrcBlocks& src, index_t off, index_t n, std::byte* buf) {
  pack_peer_range(p, i, src, off, n, buf, stream_for(n));
}

void unpack_peer_range(const PlanCore& p, int i, const std::byte* buf, index_t off, index_t n, const DstBlocks& dst) {
  unpack_peer_range(p, i, buf, off, n, dst, stream_for(n));
}

void pack_peer_range(const PlanCore& p, int i, const SrcBlocks& src, index_t off, index_t n, std::byte* buf,
                     bool stream) {
  const index_t es = p.rp.elem_size;
  for_range(p.rp.sends[i].segments, off / es, (off + n) / es, [&](const Segment& s, index_t at) {
    pack_run(s, src.at(s.at, es), buf + at * es, es, stream);
  });
  if (stream) stream_fence();
}

void unpack_peer_range(const PlanCore& p, int i, const std::byte* buf, index_t off, index_t n, const DstBlocks& dst,
                       bool stream) {
  const index_t es = p.rp.elem_size;
  const Arithmetic* a = arithmetic_of(p);
  for_range(p.rp.receives[i].segments, off / es, (off + n) / es, [&](const Segment& s, index_t at) {
    unpack_run(s, buf + at * es, dst.at(s.at, es), es, stream, a);
  });
  if (stream) stream_fence();
}

}  // namespace redist::detail
