// Element types and the arithmetic a redistribution may apply while it copies:
// target = alpha * op(source) + beta * target, op(x) = x or conj(x); the
// transposition part of op is the region's (Region::axes). Pure values, no MPI.
#pragma once

#include <complex>
#include <string>
#include <string_view>

#include "redist/geometry.hpp"

namespace redist {

// `bytes`: opaque elements (any size), moved bit for bit and never computed on.
enum class ElementType { bytes, f32, f64, c64, c128, i32, i64 };

// "f64", ...; size in bytes (0 for `bytes`: any).
std::string_view element_type_name(ElementType t);
index_t element_type_size(ElementType t);
// Parses a name ("f32", "f64", "c64", "c128", "i32", "i64", "bytes"); throws
// redist::Error naming the allowed ones.
ElementType parse_element_type(std::string_view name);
inline bool is_complex(ElementType t) { return t == ElementType::c64 || t == ElementType::c128; }
inline bool is_floating(ElementType t) {
  return t == ElementType::f32 || t == ElementType::f64 || is_complex(t);
}

// BLAS's conventions: beta = 0 does not read the target (NaN there is
// overwritten) and alpha = 0 does not read the source. Applied while copying
// (local copies and unpacking), never as an extra pass; the products and the sum
// are rounded one by one (no fused multiply-add), as ScaLAPACK's p?tran does.
struct Arithmetic {
  ElementType type = ElementType::bytes;
  std::complex<double> alpha = 1.0, beta = 0.0;
  bool conjugate = false;  // op(x) = conj(x): complex types only (a no-op on real ones)

  // Nothing to compute: target = source.
  bool identity() const { return alpha == 1.0 && beta == 0.0 && !(conjugate && is_complex(type)); }
  // Empty when usable with elements of `elem_size` bytes, else what is wrong.
  std::string check(index_t elem_size) const;
  // "type=f64 alpha=2 beta=0.5 conj" (what ranks compare; "" for the identity).
  std::string str() const;
};

}  // namespace redist
