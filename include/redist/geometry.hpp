// Layer `geometry`: N-dimensional indices and boxes with 64-bit coordinates.
// Pure, no MPI. A matrix is the 2-D case; dimension 0 is the fastest-varying
// (column-major, as in ScaLAPACK and PLASMA/DPLASMA tile storage).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "redist/error.hpp"

namespace redist {

using index_t = std::int64_t;

// Largest number of dimensions a layout may have. Segments carry fixed-size
// coordinate arrays (no heap per segment), so this bounds their size.
inline constexpr int kMaxDims = 4;

// A point or extent in N-D (N = ndim() <= kMaxDims), 64-bit per coordinate.
class Coord {
 public:
  Coord() = default;
  explicit Coord(int ndim, index_t fill = 0);
  Coord(std::initializer_list<index_t> values);

  int ndim() const { return ndim_; }
  index_t& operator[](int d) { return v_[d]; }
  index_t operator[](int d) const { return v_[d]; }
  const index_t* begin() const { return v_.data(); }
  const index_t* end() const { return v_.data() + ndim_; }

  // Product of the coordinates (element count of an extent); throws on int64 overflow.
  index_t volume() const;
  bool operator==(const Coord& o) const;
  // "8000x300" (the spec-string form of an extent).
  std::string str() const;

 private:
  std::array<index_t, kMaxDims> v_{};
  int ndim_ = 0;
};

// Half-open 1-D interval [lo, lo + size).
struct Interval {
  index_t lo = 0;
  index_t size = 0;
  index_t hi() const { return lo + size; }
  bool empty() const { return size <= 0; }
};

// Intersection of two intervals (size 0 when disjoint).
inline Interval intersect(Interval a, Interval b) {
  index_t lo = a.lo > b.lo ? a.lo : b.lo;
  index_t hi = a.hi() < b.hi() ? a.hi() : b.hi();
  return {lo, hi > lo ? hi - lo : 0};
}

// N-D box: lower corner and extent.
struct Box {
  Coord lo;
  Coord size;
  int ndim() const { return lo.ndim(); }
  bool empty() const;
  Interval dim(int d) const { return {lo[d], size[d]}; }
  bool operator==(const Box& o) const = default;
};

Box intersect(const Box& a, const Box& b);

// Checked 64-bit arithmetic on user-given sizes and offsets, the one place for it
// (every product and sum of values a user chose goes through these).
// fits_mul/fits_add: false when the result does not fit in int64 (`out` is then
// meaningless), for checks that report the values themselves.
inline bool fits_mul(index_t a, index_t b, index_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool fits_add(index_t a, index_t b, index_t& out) { return !__builtin_add_overflow(a, b, &out); }
// checked_mul/checked_add: throw redist::Error naming `what` and both values.
index_t checked_mul(index_t a, index_t b, const char* what);
index_t checked_add(index_t a, index_t b, const char* what);

// Column-major linear index of `c` in an array of extent `shape` (dimension 0 fastest).
inline index_t linear_index(const Coord& c, const Coord& shape) {
  index_t lin = 0;
  for (int d = c.ndim() - 1; d >= 0; --d) lin = lin * shape[d] + c[d];
  return lin;
}

// The splitmix64 finalizer: a cheap, well-mixed deterministic hash (random
// ownership draws an owner per tile from it; the test oracle its element bytes).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace redist
