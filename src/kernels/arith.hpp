// The arithmetic kernel: target = alpha * op(source) + beta * target over a run
// (kernels/copy.hpp's walk_run), for the element types of redist/element.hpp.
// Each product and the sum are rounded on their own (no fused multiply-add: the
// build passes -ffp-contract=off), complex products by the textbook formula: the
// results of ScaLAPACK's own p?tran loops, bit for bit (docs/transforms.md says
// where ScaLAPACK calls BLAS instead).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/copy.hpp"
#include "redist/element.hpp"

namespace redist::detail {

template <class R>
struct Cplx {
  R re, im;
};

template <class R>
inline R mul_re(R ar, R ai, R xr, R xi) { return ar * xr - ai * xi; }
template <class R>
inline R mul_im(R ar, R ai, R xr, R xi) { return ar * xi + ai * xr; }

// One row of n elements of type R (real) or Cplx<R>; alpha/beta as given.
template <class R>
inline void axpby_real(R* to, const R* from, index_t n, R alpha, R beta, bool read_from, bool read_to) {
  for (index_t i = 0; i < n; ++i) {
    R x = read_from ? alpha * from[i] : R(0);
    if (read_to) x = read_from ? x + beta * to[i] : beta * to[i];
    to[i] = x;
  }
}
template <class R>
inline void axpby_complex(Cplx<R>* to, const Cplx<R>* from, index_t n, Cplx<R> a, Cplx<R> b, bool conj, bool read_from,
                          bool read_to) {
  for (index_t i = 0; i < n; ++i) {
    R re = 0, im = 0;
    if (read_from) {
      const R xr = from[i].re, xi = conj ? -from[i].im : from[i].im;
      re = mul_re(a.re, a.im, xr, xi), im = mul_im(a.re, a.im, xr, xi);
    }
    if (read_to) {
      const R yr = mul_re(b.re, b.im, to[i].re, to[i].im), yi = mul_im(b.re, b.im, to[i].re, to[i].im);
      if (read_from)
        re = re + yr, im = im + yi;
      else
        re = yr, im = yi;
    }
    to[i].re = re, to[i].im = im;
  }
}

// Elements may be unaligned in storage (any byte offset): rows go through a
// small aligned buffer when they are.
template <class E, class F>
inline void typed_row(std::byte* to, const std::byte* from, index_t n, F&& f) {
  constexpr index_t kChunk = 256;
  if (reinterpret_cast<std::uintptr_t>(to) % alignof(E) == 0 && reinterpret_cast<std::uintptr_t>(from) % alignof(E) == 0)
    return f(reinterpret_cast<E*>(to), reinterpret_cast<const E*>(from), n);
  E t[kChunk], s[kChunk];
  for (index_t i = 0; i < n; i += kChunk) {
    const index_t k = n - i < kChunk ? n - i : kChunk;
    std::memcpy(t, to + i * sizeof(E), static_cast<size_t>(k) * sizeof(E));
    std::memcpy(s, from + i * sizeof(E), static_cast<size_t>(k) * sizeof(E));
    f(t, s, k);
    std::memcpy(to + i * sizeof(E), t, static_cast<size_t>(k) * sizeof(E));
  }
}

// Applies `a` over a run (same arguments as copy_run). a.identity() is allowed
// (then it copies); the element size must be the type's (Arithmetic::check).
inline void axpby_run(const Arithmetic& a, const Coord& shape, index_t run, index_t es,
                      const std::array<index_t, 2>& count, const std::byte* from, const Coord& fs,
                      const std::array<index_t, 2>& fstep, std::byte* to, const Coord& ts,
                      const std::array<index_t, 2>& tstep) {
  if (a.identity()) return copy_run(shape, run, es, count, from, fs, fstep, to, ts, tstep);
  const bool read_from = a.alpha != 0.0, read_to = a.beta != 0.0;
  auto row_op = [&](std::byte* t, const std::byte* f, index_t bytes) {
    const index_t n = bytes / es;
    switch (a.type) {
      case ElementType::f32:
        return typed_row<float>(t, f, n, [&](float* y, const float* x, index_t k) {
          axpby_real<float>(y, x, k, static_cast<float>(a.alpha.real()), static_cast<float>(a.beta.real()), read_from, read_to);
        });
      case ElementType::f64:
        return typed_row<double>(t, f, n, [&](double* y, const double* x, index_t k) {
          axpby_real<double>(y, x, k, a.alpha.real(), a.beta.real(), read_from, read_to);
        });
      case ElementType::c64:
        return typed_row<Cplx<float>>(t, f, n, [&](Cplx<float>* y, const Cplx<float>* x, index_t k) {
          axpby_complex<float>(y, x, k, {static_cast<float>(a.alpha.real()), static_cast<float>(a.alpha.imag())},
                               {static_cast<float>(a.beta.real()), static_cast<float>(a.beta.imag())}, a.conjugate,
                               read_from, read_to);
        });
      case ElementType::c128:
        return typed_row<Cplx<double>>(t, f, n, [&](Cplx<double>* y, const Cplx<double>* x, index_t k) {
          axpby_complex<double>(y, x, k, {a.alpha.real(), a.alpha.imag()}, {a.beta.real(), a.beta.imag()}, a.conjugate,
                                read_from, read_to);
        });
      default:  // not floating: Arithmetic::check refuses anything but the identity
        return copy_row(t, f, static_cast<size_t>(bytes), false);
    }
  };
  walk_run(shape, run, es, count, from, fs, fstep, to, ts, tstep,
           [&](std::byte* t, index_t ts0, index_t ts1, const std::byte* f, index_t fs0, index_t fs1, index_t n0,
               index_t n1, index_t row) {
             for (index_t j = 0; j < n1; ++j)
               for (index_t i = 0; i < n0; ++i) row_op(t + j * ts1 + i * ts0, f + j * fs1 + i * fs0, row);
           });
}

}  // namespace redist::detail
