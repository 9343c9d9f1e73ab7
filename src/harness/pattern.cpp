#include "harness/pattern.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <type_traits>

namespace redist {
namespace {

// Calls f(global index of the run start, pointer, run length) for every run of
// consecutive dimension-0 elements this rank stores.
template <class F>
void for_each_run(const Layout& l, int rank, std::span<void* const> blocks, F&& f) {
  const LocalIndex li(l, rank);
  const index_t es = l.elem_size();
  const int n = l.ndim();
  for (index_t o = 0; o < li.ntiles(); ++o) {
    const Coord t = li.tile(o);
    const Box b = l.tile_box(t);
    if (b.empty()) continue;
    Coord g = b.lo;
    while (true) {
      const Address a = li.address(t, g);
      f(g, static_cast<unsigned char*>(blocks[a.block]) + a.offset * es, b.size[0]);
      int d = 1;
      for (; d < n; ++d) {
        if (++g[d] < b.lo[d] + b.size[d]) break;
        g[d] = b.lo[d];
      }
      if (d >= n) break;
    }
  }
}

std::string hex(const unsigned char* p, index_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (index_t i = 0; i < n && i < 16; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  return s;
}

}  // namespace

namespace {

// What pattern_element does to each 8-byte word of an element: doubles and
// floats keep their sign and mantissa bits and get an exponent that makes them
// finite, in [1, 2) x sign; bytes keep all bits.
struct WordMask {
  std::uint64_t keep = ~std::uint64_t{0}, set = 0;
};

WordMask word_mask(index_t es, ElementType type) {
  if ((es == 8 && type == ElementType::bytes) || type == ElementType::f64 || type == ElementType::c128)
    return {0x800fffffffffffffULL, 0x3ff0000000000000ULL};  // finite double
  if (type == ElementType::f32 || type == ElementType::c64)
    return {0x807fffff807fffffULL, 0x3f8000003f800000ULL};  // two finite floats
  return {};
}

// Pattern `id` is a stream of 8-byte words, word q = mix64(key ^ q) with the
// element type's mask; element `lin` of es bytes holds:
// - where es divides 8 or 8 divides es (1, 2, 4, 8, 16, 24, ... bytes): bytes
//   [lin * es, lin * es + es) of the stream, the words in memory order. A run of
//   consecutive elements is a run of the stream: one hash per 8 bytes, not one or
//   two per element (test_large's LargeElements, 2^31 one-byte elements filled and
//   checked three times: 64 -> 12.6 s);
// - any other size: words lin * W .. lin * W + W - 1 (W = ceil(es / 8)), the last
//   one cut to what is left.
// A word never straddles two elements of a masked type (4-byte floats fill half
// words, 8-byte doubles whole ones), so every float or double is finite.
std::uint64_t pattern_word(std::uint64_t key, WordMask m, std::uint64_t q) {
  return (mix64(key ^ q) & m.keep) | m.set;
}

void stream_bytes(std::uint64_t key, WordMask m, index_t from, index_t n, unsigned char* out) {
  std::uint64_t q = static_cast<std::uint64_t>(from) >> 3;
  index_t off = from & 7;
  while (n > 0) {
    const std::uint64_t h = pattern_word(key, m, q);
    if (off == 0 && n >= 8) {
      std::memcpy(out, &h, 8);
      out += 8, n -= 8;
    } else {
      const index_t take = std::min<index_t>(8 - off, n);
      std::memcpy(out, reinterpret_cast<const unsigned char*>(&h) + off, static_cast<size_t>(take));
      out += take, n -= take, off = 0;
    }
    ++q;
  }
}

// Pattern `id` of `count` elements of es bytes whose global indices are lin0,
// lin0 + step, ...: the bytes pattern_element writes, element after element.
void pattern_run(std::uint64_t id, index_t lin0, index_t step, index_t count, index_t es, ElementType type,
                 unsigned char* out) {
  const WordMask m = word_mask(es, type);
  const std::uint64_t key = id * 0x2545f4914f6cdd1dULL;
  if (8 % es == 0 || es % 8 == 0) {
    if (step == 1) return stream_bytes(key, m, lin0 * es, count * es, out);
    for (index_t i = 0; i < count; ++i, out += es) stream_bytes(key, m, (lin0 + i * step) * es, es, out);
    return;
  }
  const index_t words = (es + 7) / 8;
  for (index_t i = 0; i < count; ++i, out += es) {
    const std::uint64_t q0 = static_cast<std::uint64_t>((lin0 + i * step) * words);
    for (index_t w = 0; w < words; ++w) {
      const std::uint64_t h = pattern_word(key, m, q0 + static_cast<std::uint64_t>(w));
      std::memcpy(out + w * 8, &h, static_cast<size_t>(std::min<index_t>(es - w * 8, 8)));
    }
  }
}

}  // namespace

void pattern_element(std::uint64_t id, index_t linear, index_t es, unsigned char* out, ElementType type) {
  pattern_run(id, linear, 1, 1, es, type, out);
}

void fill_pattern(const Layout& l, int rank, std::span<void* const> blocks, std::uint64_t id, ElementType type) {
  const index_t es = l.elem_size();
  for_each_run(l, rank, blocks, [&](const Coord& g, unsigned char* p, index_t len) {
    pattern_run(id, linear_index(g, l.shape()), 1, len, es, type, p);
  });
}

namespace {

template <class T>
void combine(const Arithmetic& a, T alpha, T beta, const unsigned char* x, unsigned char* y) {
  T xv, yv, r;
  std::memcpy(&xv, x, sizeof(T));
  std::memcpy(&yv, y, sizeof(T));
  if constexpr (!std::is_floating_point_v<T>)
    if (a.conjugate) xv = std::conj(xv);
  if (a.alpha == 0.0)
    r = a.beta == 0.0 ? T(0) : beta * yv;
  else
    r = a.beta == 0.0 ? alpha * xv : alpha * xv + beta * yv;
  std::memcpy(y, &r, sizeof(T));
}

// want = alpha * op(source) + beta * want (want holds the target's pattern).
void expected_element(const Arithmetic& a, const unsigned char* source, unsigned char* want) {
  switch (a.type) {
    case ElementType::f32:
      return combine<float>(a, static_cast<float>(a.alpha.real()), static_cast<float>(a.beta.real()), source, want);
    case ElementType::f64: return combine<double>(a, a.alpha.real(), a.beta.real(), source, want);
    case ElementType::c64:
      return combine<std::complex<float>>(a, std::complex<float>(a.alpha), std::complex<float>(a.beta), source, want);
    case ElementType::c128: return combine<std::complex<double>>(a, a.alpha, a.beta, source, want);
    default: return;
  }
}

}  // namespace

CheckResult check_redistributed(const Layout& dst, int rank, std::span<void* const> blocks,
                                const Region& region, const Layout& src, std::uint64_t src_id,
                                std::uint64_t dst_id, const Arithmetic& arith) {
  CheckResult r;
  const index_t es = dst.elem_size();
  const int n = dst.ndim();
  const bool any = !region.empty();
  const ElementType type = arith.type;
  const bool compute = !arith.identity();
  std::vector<unsigned char> want(static_cast<size_t>(es)), source(static_cast<size_t>(es));
  const index_t chunk = std::max<index_t>(1, 65536 / es);
  std::vector<unsigned char> expect(static_cast<size_t>(chunk * es));
  Coord sg(n);
  for_each_run(dst, rank, blocks, [&](const Coord& g0, unsigned char* p, index_t len) {
    // Is the run's row (dims >= 1) inside the region, and which part of dim 0?
    bool row_in = any;
    for (int d = 1; d < n && row_in; ++d)
      row_in = g0[d] >= region.dst_offset[d] && g0[d] < region.dst_offset[d] + region.size[d];
    const index_t lin_dst = linear_index(g0, dst.shape());
    // The source's linear index at the region's first column of this row; along
    // dimension 0 it grows by one per element (linear_index is column-major).
    // With a permuting region target dimension d reads source dimension
    // region.src_dim(d): along target dimension 0 the source index grows by
    // that dimension's column-major stride.
    index_t lin_src = 0, step_src = 1;
    if (row_in) {
      for (int d = 0; d < n; ++d) {
        const int sd = region.src_dim(d);
        sg[sd] = d == 0 ? region.src_offset[sd] : g0[d] - region.dst_offset[d] + region.src_offset[sd];
      }
      lin_src = linear_index(sg, src.shape());
      for (int d = 0; d < region.src_dim(0); ++d) step_src *= src.shape()[d];
    }
    const index_t lo = region.dst_offset[0], hi = lo + region.size[0];
    // Element i of the run differs from `want`: count it, describe the first one.
    auto wrong = [&](index_t i, bool in, const unsigned char* want_i) {
      if (r.wrong++ > 0) return;
      Coord g = g0;
      g[0] += i;
      r.first_error = detail::cat("rank ", rank, ": element ", g.str(), " (", in ? "inside" : "outside",
                                  " the region) holds ", hex(p + i * es, es), ", expected ", hex(want_i, es));
    };
    if (!compute) {
      // Plain moves: the run's expected bytes a chunk at a time, one memcmp per
      // chunk, element by element only in a chunk that differs (2^31 one-byte
      // elements in seconds, not minutes: test_large). The run's elements [a, b)
      // lie inside the region along dimension 0.
      const index_t a = row_in ? std::clamp(lo - g0[0], index_t{0}, len) : len;
      const index_t b = row_in ? std::clamp(hi - g0[0], a, len) : len;
      auto part = [&](index_t from, index_t to, bool in) {
        for (index_t c = from; c < to; c += chunk) {
          const index_t k = std::min(chunk, to - c);
          if (in)
            pattern_run(src_id, lin_src + (g0[0] + c - lo) * step_src, step_src, k, es, type, expect.data());
          else
            pattern_run(dst_id, lin_dst + c, 1, k, es, type, expect.data());
          r.checked += k;
          if (std::memcmp(expect.data(), p + c * es, static_cast<size_t>(k * es)) == 0) continue;
          for (index_t i = 0; i < k; ++i)
            if (std::memcmp(expect.data() + i * es, p + (c + i) * es, static_cast<size_t>(es)) != 0)
              wrong(c + i, in, expect.data() + i * es);
        }
      };
      part(0, a, false);
      part(a, b, true);
      part(b, len, false);
      return;
    }
    for (index_t i = 0; i < len; ++i) {
      const index_t x = g0[0] + i;
      const bool in = row_in && x >= lo && x < hi;
      // want: alpha * op(the source element moved there) + beta * the target's own
      // element; outside the region the target's own.
      pattern_element(dst_id, lin_dst + i, es, want.data(), type);
      if (in) {
        pattern_element(src_id, lin_src + (x - lo) * step_src, es, source.data(), type);
        expected_element(arith, source.data(), want.data());
      }
      ++r.checked;
      if (std::memcmp(want.data(), p + i * es, static_cast<size_t>(es)) != 0) wrong(i, in, want.data());
    }
  });
  return r;
}

CheckResult check_pattern(const Layout& l, int rank, std::span<void* const> blocks, std::uint64_t id,
                          ElementType type) {
  Region none{Coord(l.ndim(), 0), Coord(l.ndim(), 0), Coord(l.ndim(), 0)};
  Arithmetic a;
  a.type = type;
  return check_redistributed(l, rank, blocks, none, l, id, id, a);
}

}  // namespace redist
