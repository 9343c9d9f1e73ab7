// Pieces of a message: a range of elements of a peer's segments, packed one
// after another as the message holds them (each segment's repetitions in order,
// each column-major), cut into Segments that lie in storage. What `phased` sends
// when a memory budget (Options::max_buffer_bytes) is below one message: the
// message goes as pieces of the budget's size, packed and unpacked one at a
// time. Pure, header only, no allocation (the Segments are values with inline
// coordinates).
//
// A range inside one box (one repetition of a segment) is cut into boxes that
// are contiguous in the packed (column-major) order: whole slabs of the last
// dimension, and at either end a partial slab, cut the same way one dimension
// down (a range of dimension d at fixed indices above d, full extents below).
// At most 2 * ndim + 1 boxes per cut; whole repetitions stay one Segment, and so
// do whole rows of repetitions (count[0] of them): a range of a run is at most
// 2 * (2 * ndim + 1) + 3 pieces however many repetitions it holds.
#pragma once

#include <algorithm>
#include <span>

#include "redist/plan.hpp"

namespace redist::detail {

// Calls f(box, at) for the boxes covering elements [a, b) of the packed order of
// box `s` (one repetition: s.count is ignored); `at` is the box's first element
// in that order. `d`: the dimensions 0..d vary, those above are fixed (extent 1
// in `cut`, whose shape and offset are set here).
template <class F>
void cut_box(const Segment& s, Segment& cut, int d, index_t a, index_t b, index_t base, index_t offset, F& f) {
  if (a >= b) return;
  index_t slab = 1;  // elements of one index of dimension d
  for (int e = 0; e < d; ++e) slab *= s.shape[e];
  auto emit = [&](index_t lo, index_t n) {  // indices [lo, lo + n) of dimension d, everything below whole
    for (int e = 0; e < d; ++e) cut.shape[e] = s.shape[e];
    cut.shape[d] = n;
    for (int e = d + 1; e < s.shape.ndim(); ++e) cut.shape[e] = 1;
    cut.at.offset = offset + lo * s.at.strides[d];
    cut.run = contiguous_run(cut.shape, cut.at.strides);
    f(static_cast<const Segment&>(cut), base + lo * slab);
  };
  index_t i0 = a / slab;
  if (a % slab != 0) {  // the head: within index i0 of dimension d
    const index_t end = std::min(b, (i0 + 1) * slab);
    cut_box(s, cut, d - 1, a - i0 * slab, end - i0 * slab, base + i0 * slab, offset + i0 * s.at.strides[d], f);
    a = end, ++i0;
    if (a >= b) return;
  }
  const index_t i1 = b / slab;  // whole indices [i0, i1)
  if (i1 > i0) emit(i0, i1 - i0);
  if (b > i1 * slab)  // the tail: within index i1
    cut_box(s, cut, d - 1, 0, b - i1 * slab, base + i1 * slab, offset + i1 * s.at.strides[d], f);
}

// Calls f(piece, at) for the pieces of elements [a, b) of `segments` packed one
// after another; `at` is the piece's first element counted from a.
template <class F>
void for_range(std::span<const Segment> segments, index_t a, index_t b, F&& f) {
  index_t base = 0;  // the current segment's first element in the message
  for (const Segment& s : segments) {
    const index_t n = s.elements();
    if (base >= b) return;
    if (base + n <= a) {
      base += n;
      continue;
    }
    const index_t lo = std::max(a, base) - base, hi = std::min(b, base + n) - base;
    if (lo == 0 && hi == n) {
      f(s, base - a);
      base += n;
      continue;
    }
    const index_t vol = s.shape.volume(), row = vol * s.count[0];  // row: count[0] repetitions
    for (index_t e = lo; e < hi;) {
      const index_t j = e / vol, j0 = j % s.count[0], j1 = j / s.count[0];
      Segment one = s;  // repetition j (and those after it in its row)
      one.at.offset += j0 * s.step[0] + j1 * s.step[1];
      one.count = {1, 1};
      if (e % vol != 0 || hi - e < vol) {  // part of one repetition
        const index_t end = std::min(hi, (j + 1) * vol);
        index_t shift = base + j * vol - a;
        auto g = [&](const Segment& piece, index_t at) { f(piece, shift + at); };
        Segment cut = one;
        cut_box(one, cut, one.shape.ndim() - 1, e - j * vol, end - j * vol, 0, one.at.offset, g);
        e = end;
      } else if (j0 == 0 && hi - e >= row) {  // whole rows j1 .. j1 + m - 1: one piece, not one per row
        const index_t m = (hi - e) / row;
        one.count = {s.count[0], m};
        f(static_cast<const Segment&>(one), base + e - a);
        e += m * row;
      } else {  // whole repetitions j0 .. j0 + k - 1 of row j1
        const index_t k = std::min((hi - e) / vol, s.count[0] - j0);
        one.count = {k, 1};
        f(static_cast<const Segment&>(one), base + e - a);
        e += k * vol;
      }
    }
    base += n;
  }
}

}  // namespace redist::detail
