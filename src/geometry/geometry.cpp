#include "redist/geometry.hpp"

#include <iostream>

namespace redist {

namespace detail {
void assertion_failed(const char* expr, const char* file, int line, const std::string& values) {
  std::cerr << "redist internal error: " << file << ":" << line << ": " << expr;
  if (!values.empty()) std::cerr << " (" << values << ")";
  std::cerr << std::endl;
  std::abort();
}
}  // namespace detail

Coord::Coord(int ndim, index_t fill) : ndim_(ndim) {
  REDIST_ASSERT(ndim >= 0 && ndim <= kMaxDims, "ndim=", ndim);
  for (int d = 0; d < ndim; ++d) v_[d] = fill;
}

Coord::Coord(std::initializer_list<index_t> values) : ndim_(static_cast<int>(values.size())) {
  if (ndim_ > kMaxDims) detail::fail("at most ", kMaxDims, " dimensions are supported, got ", ndim_);
  int d = 0;
  for (index_t x : values) v_[d++] = x;
}

index_t Coord::volume() const {
  index_t v = 1;
  for (int d = 0; d < ndim_; ++d) v = checked_mul(v, v_[d], "element count");
  return v;
}

bool Coord::operator==(const Coord& o) const {
  if (ndim_ != o.ndim_) return false;
  for (int d = 0; d < ndim_; ++d)
    if (v_[d] != o.v_[d]) return false;
  return true;
}

std::string Coord::str() const {
  std::string s;
  for (int d = 0; d < ndim_; ++d) {
    if (d) s += 'x';
    s += std::to_string(v_[d]);
  }
  return s;
}

bool Box::empty() const {
  for (int d = 0; d < ndim(); ++d)
    if (size[d] <= 0) return true;
  return false;
}

Box intersect(const Box& a, const Box& b) {
  Box r{Coord(a.ndim()), Coord(a.ndim())};
  for (int d = 0; d < a.ndim(); ++d) {
    Interval i = intersect(a.dim(d), b.dim(d));
    r.lo[d] = i.lo;
    r.size[d] = i.size;
  }
  return r;
}

index_t checked_mul(index_t a, index_t b, const char* what) {
  index_t r;
  if (!fits_mul(a, b, r))
    detail::fail(what, " overflows 64 bits: ", a, " * ", b);
  return r;
}

index_t checked_add(index_t a, index_t b, const char* what) {
  index_t r;
  if (!fits_add(a, b, r))
    detail::fail(what, " overflows 64 bits: ", a, " + ", b);
  return r;
}

}  // namespace redist
