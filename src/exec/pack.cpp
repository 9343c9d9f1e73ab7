#include "exec/pack.hpp"

#include "kernels/copy.hpp"

namespace redist::detail {

void copy_locals(const PlanCore& p, const SrcBlocks& src, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const bool stream = stream_for(p.rp.stats.bytes_local);
  for (const LocalCopy& c : p.rp.locals)
    copy_box(c.shape, c.run, es, src.at(c.from, es), c.from.strides, dst.at(c.to, es), c.to.strides, stream);
  if (stream) stream_fence();
}

void pack_peer(const PlanCore& p, int i, const SrcBlocks& src, std::byte* buf) {
  const index_t es = p.rp.elem_size;
  const bool stream = stream_for(p.rp.stats.bytes_sent);
  for (const Segment& s : p.rp.sends[i].segments) {
    copy_box(s.shape, s.run, es, src.at(s.at, es), s.at.strides, buf, packed_strides(s.shape), stream);
    buf += s.shape.volume() * es;
  }
  if (stream) stream_fence();
}

void unpack_peer(const PlanCore& p, int i, const std::byte* buf, const DstBlocks& dst) {
  const index_t es = p.rp.elem_size;
  const bool stream = stream_for(p.rp.stats.bytes_received);
  for (const Segment& s : p.rp.receives[i].segments) {
    copy_box(s.shape, s.run, es, buf, packed_strides(s.shape), dst.at(s.at, es), s.at.strides, stream);
    buf += s.shape.volume() * es;
  }
  if (stream) stream_fence();
}

}  // namespace redist::detail
