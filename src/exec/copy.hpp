// Copy kernels shared by every executor: an N-D box between two strided places.
#pragma once

#include <cstddef>
#include <cstring>

#include "redist/geometry.hpp"

namespace redist::detail {

// Copies a box of `shape` elements of `es` bytes. Strides are in elements per
// dimension (dimension 0 contiguous). Contiguous leading dimensions are merged
// so a whole tile-sized segment is one memcpy.
inline void copy_box(const Coord& shape, index_t es, const std::byte* from, const Coord& fs,
                     std::byte* to, const Coord& ts) {
  const int n = shape.ndim();
  index_t row = shape[0] * es;  // bytes copied per memcpy
  int d = 1;
  index_t run = shape[0];       // elements in the merged leading run
  while (d < n && fs[d] == run && ts[d] == run) {
    row *= shape[d];
    run *= shape[d];
    ++d;
  }
  if (d == n) {
    std::memcpy(to, from, static_cast<size_t>(row));
    return;
  }
  // Remaining dimensions d..n-1 (at most 3): an odometer over them.
  index_t idx[kMaxDims] = {};
  while (true) {
    index_t fo = 0, to_ = 0;
    for (int e = d; e < n; ++e) fo += idx[e] * fs[e], to_ += idx[e] * ts[e];
    std::memcpy(to + to_ * es, from + fo * es, static_cast<size_t>(row));
    int e = d;
    for (; e < n; ++e) {
      if (++idx[e] < shape[e]) break;
      idx[e] = 0;
    }
    if (e == n) return;
  }
}

// Strides of a column-major packed box.
inline Coord packed_strides(const Coord& shape) {
  Coord s(shape.ndim());
  index_t st = 1;
  for (int d = 0; d < shape.ndim(); ++d) s[d] = st, st *= shape[d];
  return s;
}

}  // namespace redist::detail
