// Copy kernels shared by every strategy and by calibration: an N-D box between two
// strided places. Layer `kernels`: below cost and exec, above geometry only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "redist/geometry.hpp"

namespace redist::detail {

// Non-temporal ("streaming") stores write whole cache lines to memory without
// reading them first. A copy phase that moves at least kStreamAbove bytes (far
// more than the caches keep for the next step) uses them for rows of at least
// kStreamRowMin bytes: packing 1.6 KB strided rows ran at 9.4 GB/s with them,
// 5.5 GB/s with memcpy, and a 64 MB memcpy at 7.5 GB/s (docs/strategies.md).
inline constexpr index_t kStreamAbove = index_t{4} << 20;
inline constexpr index_t kStreamRowMin = 256;
inline bool stream_for(index_t phase_bytes) { return phase_bytes >= kStreamAbove; }

// Makes streaming stores visible to other cores (and processes) before the
// data is handed on: call after a streaming phase, before MPI sees the buffer.
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// With `stream`, a row of at least kStreamRowMin bytes is written with streaming
// stores on the whole cache lines it covers only; the partial lines at either end
// take ordinary stores. A streaming store to part of a line leaves the memory
// controller a partial line to merge: rows of 2,400 bytes, half of them starting
// mid-line, were pushed 7-12% slower that way than with the ends stored plainly
// (shm, issue 14's cases c and e; docs/shm.md).
inline void copy_row(std::byte* to, const std::byte* from, size_t n, bool stream) {
#if defined(__SSE2__)
  if (stream && n >= static_cast<size_t>(kStreamRowMin)) {
    const size_t head = (64 - (reinterpret_cast<std::uintptr_t>(to) & 63)) & 63;
    std::memcpy(to, from, head);
    to += head, from += head, n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 48), d);
    }
    std::memcpy(to + i, from + i, n - i);
    return;
  }
#endif
  (void)stream;
  std::memcpy(to, from, n);
}

// Streams every byte of a row, partial lines at its ends included, for a row
// whose neighbours in its target are written just before and just after it (a
// chain of short rows: the write-combining buffers merge them into whole lines
// before they leave the core). Issue 14's case d pushes rows of 80 bytes into two
// targets in turn: 0.97 ms this way, 1.65 ms with memcpy's ordinary stores
// (docs/shm.md). Needs `to` and `n` multiples of 8 (8- and
// 16-byte streaming stores); anything else takes copy_row.
inline void copy_row_chained(std::byte* to, const std::byte* from, size_t n) {
#if defined(__SSE2__) && defined(__x86_64__)
  if (((reinterpret_cast<std::uintptr_t>(to) | n) & 7) == 0) {
    long long w;
    if (n >= 8 && (reinterpret_cast<std::uintptr_t>(to) & 8)) {
      std::memcpy(&w, from, 8);
      _mm_stream_si64(reinterpret_cast<long long*>(to), w);
      to += 8, from += 8, n -= 8;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
    if (i < n) {
      std::memcpy(&w, from + i, 8);
      _mm_stream_si64(reinterpret_cast<long long*>(to + i), w);
    }
    return;
  }
#endif
  copy_row(to, from, n, true);
}

// Copies n elements of 8 bytes, `fs` bytes apart in `from`, one after the other
// to `to`, two at a time in one 16-byte streaming store: a transposed copy, or a
// cyclic column gathered (1x1 tiles of doubles), where copy_row_chained's store
// per element ran 4000^2 transposes 1.6x slower (docs/transforms.md). False (and
// nothing written) where `to` is not a multiple of 8, which the stores need.
inline bool gather_stream8(std::byte* to, const std::byte* from, index_t fs, index_t n) {
#if defined(__SSE2__) && defined(__x86_64__)
  if (reinterpret_cast<std::uintptr_t>(to) & 7) return false;
  index_t i = 0;
  long long a, b;
  if (n > 0 && (reinterpret_cast<std::uintptr_t>(to) & 8)) {  // to a 16-byte boundary first
    std::memcpy(&a, from, 8);
    _mm_stream_si64(reinterpret_cast<long long*>(to), a);
    i = 1;
  }
  for (; i + 2 <= n; i += 2) {
    std::memcpy(&a, from + i * fs, 8);
    std::memcpy(&b, from + (i + 1) * fs, 8);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i * 8), _mm_set_epi64x(b, a));
  }
  if (i < n) {
    std::memcpy(&a, from + i * fs, 8);
    _mm_stream_si64(reinterpret_cast<long long*>(to + i * 8), a);
  }
  return true;
#else
  (void)to, (void)from, (void)fs, (void)n;
  return false;
#endif
}

// The same for elements of 4 bytes, four at a time (a float transposed or gathered
// from 1x1 tiles). False where `to` is not a multiple of 4.
inline bool gather_stream4(std::byte* to, const std::byte* from, index_t fs, index_t n) {
#if defined(__SSE2__) && defined(__x86_64__)
  if (reinterpret_cast<std::uintptr_t>(to) & 3) return false;
  index_t i = 0;
  int v[4];
  for (; i < n && (reinterpret_cast<std::uintptr_t>(to + i * 4) & 15); ++i) {  // to a 16-byte boundary first
    std::memcpy(&v[0], from + i * fs, 4);
    _mm_stream_si32(reinterpret_cast<int*>(to + i * 4), v[0]);
  }
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) std::memcpy(&v[k], from + (i + k) * fs, 4);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i * 4), _mm_set_epi32(v[3], v[2], v[1], v[0]));
  }
  for (; i < n; ++i) {
    std::memcpy(&v[0], from + i * fs, 4);
    _mm_stream_si32(reinterpret_cast<int*>(to + i * 4), v[0]);
  }
  return true;
#else
  (void)to, (void)from, (void)fs, (void)n;
  return false;
#endif
}

// Transposed blocks (walk_run's cross blocks, through copy_rows): n1 target
// rows `ts1` bytes apart, row j the n0 elements of E bytes at from + j * E + i
// * fs (i < n0), so that source element (i, j + 1) follows (i, j). Element by
// element, one load each, they ran 1.2-1.5 GB/s per rank for doubles and
// floats, 1.5-2.2 for complex doubles (both ranks at once; docs/transforms.md);
// the kernels below load 16 bytes of a source row at once and fetch the next
// line of the block's rows ahead, which the hardware does not follow across
// lines kilobytes apart. With `Stream`, streaming stores, and false (nothing
// written) where the alignment they need is not there.
#if defined(__SSE2__) && defined(__x86_64__)
inline void fetch_next_lines(const std::byte* f, index_t fs, index_t n0) {
  for (index_t i = 0; i < n0; ++i) _mm_prefetch(reinterpret_cast<const char*>(f + 64 + i * fs), _MM_HINT_T0);
}

// One element of E = 4 or 8 bytes.
template <bool Stream, size_t E>
inline void put_one(std::byte* t, const std::byte* f) {
  if constexpr (!Stream) {
    std::memcpy(t, f, E);
  } else if constexpr (E == 8) {
    long long v;
    std::memcpy(&v, f, 8);
    _mm_stream_si64(reinterpret_cast<long long*>(t), v);
  } else {
    int v;
    std::memcpy(&v, f, 4);
    _mm_stream_si32(reinterpret_cast<int*>(t), v);
  }
}

// Doubles, two target rows at a time: one 16-byte load holds (i, j) and (i, j +
// 1); four loads unpack into two 16-byte stores in each row (2.2-2.7 GB/s).
// Streamed: `to` and `ts1` multiples of 8 and 16.
template <bool Stream>
inline bool transpose8(std::byte* to, index_t ts1, const std::byte* from, index_t fs, index_t n0, index_t n1) {
  const auto at = reinterpret_cast<std::uintptr_t>(to);
  if (Stream && ((at & 7) || (ts1 & 15))) return false;
  auto put = [](std::byte* t, __m128d v) {
    if constexpr (Stream) _mm_stream_pd(reinterpret_cast<double*>(t), v);
    else _mm_storeu_pd(reinterpret_cast<double*>(t), v);
  };
  const auto one = put_one<Stream, 8>;
  const index_t head = Stream && (at & 8) ? std::min<index_t>(1, n0) : 0;  // to a 16-byte boundary first
  index_t j = 0;
  for (; j + 2 <= n1; j += 2) {
    std::byte* t0 = to + j * ts1;
    std::byte* t1 = t0 + ts1;
    const std::byte* f = from + j * 8;
    if ((j & 7) == 0) fetch_next_lines(f, fs, n0);
    for (index_t i = 0; i < head; ++i) one(t0 + i * 8, f + i * fs), one(t1 + i * 8, f + i * fs + 8);
    index_t i = head;
    for (; i + 4 <= n0; i += 4) {
      const __m128d a = _mm_loadu_pd(reinterpret_cast<const double*>(f + i * fs));
      const __m128d b = _mm_loadu_pd(reinterpret_cast<const double*>(f + (i + 1) * fs));
      const __m128d c = _mm_loadu_pd(reinterpret_cast<const double*>(f + (i + 2) * fs));
      const __m128d d = _mm_loadu_pd(reinterpret_cast<const double*>(f + (i + 3) * fs));
      put(t0 + i * 8, _mm_unpacklo_pd(a, b)), put(t0 + i * 8 + 16, _mm_unpacklo_pd(c, d));
      put(t1 + i * 8, _mm_unpackhi_pd(a, b)), put(t1 + i * 8 + 16, _mm_unpackhi_pd(c, d));
    }
    for (; i < n0; ++i) one(t0 + i * 8, f + i * fs), one(t1 + i * 8, f + i * fs + 8);
  }
  for (; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) one(to + j * ts1 + i * 8, from + j * 8 + i * fs);
  return true;
}

// Floats, four target rows at a time: a 16-byte load of (i, j .. j + 3) for
// each of four i, transposed in registers into four 16-byte stores, one per row
// (8000^2 on one rank 1.18x faster; 3.3-3.5 GB/s in a box of 2848^2 where one
// load per element ran 1.1-1.3). Streamed: `to` and `ts1` multiples of 4 and 16.
template <bool Stream>
inline bool transpose4(std::byte* to, index_t ts1, const std::byte* from, index_t fs, index_t n0, index_t n1) {
  const auto at = reinterpret_cast<std::uintptr_t>(to);
  if (Stream && ((at & 3) || (ts1 & 15))) return false;
  const auto one = put_one<Stream, 4>;
  const index_t head = Stream ? std::min<index_t>(static_cast<index_t>((16 - (at & 15)) & 15) / 4, n0) : 0;
  index_t j = 0;
  for (; j + 4 <= n1; j += 4) {
    std::byte* t0 = to + j * ts1;
    const std::byte* f = from + j * 4;
    if ((j & 15) == 0) fetch_next_lines(f, fs, n0);
    for (index_t i = 0; i < head; ++i)
      for (index_t r = 0; r < 4; ++r) one(t0 + r * ts1 + i * 4, f + i * fs + r * 4);
    index_t i = head;
    for (; i + 4 <= n0; i += 4) {
      __m128 a = _mm_loadu_ps(reinterpret_cast<const float*>(f + i * fs));
      __m128 b = _mm_loadu_ps(reinterpret_cast<const float*>(f + (i + 1) * fs));
      __m128 c = _mm_loadu_ps(reinterpret_cast<const float*>(f + (i + 2) * fs));
      __m128 d = _mm_loadu_ps(reinterpret_cast<const float*>(f + (i + 3) * fs));
      _MM_TRANSPOSE4_PS(a, b, c, d);
      const __m128 rows[4] = {a, b, c, d};
      for (index_t r = 0; r < 4; ++r) {
        auto* t = reinterpret_cast<float*>(t0 + r * ts1 + i * 4);
        if constexpr (Stream) _mm_stream_ps(t, rows[r]);
        else _mm_storeu_ps(t, rows[r]);
      }
    }
    for (; i < n0; ++i)
      for (index_t r = 0; r < 4; ++r) one(t0 + r * ts1 + i * 4, f + i * fs + r * 4);
  }
  for (; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) one(to + j * ts1 + i * 4, from + j * 4 + i * fs);
  return true;
}

// Complex doubles, a row at a time, one 16-byte load and store each (3.9-4.4
// GB/s in a box of 1400^2; copy_row_chained per element ran 1.5-2.2).
// Streamed: `to` and `ts1` multiples of 16.
template <bool Stream>
inline bool transpose16(std::byte* to, index_t ts1, const std::byte* from, index_t fs, index_t n0, index_t n1) {
  if (Stream && ((reinterpret_cast<std::uintptr_t>(to) & 15) || (ts1 & 15))) return false;
  for (index_t j = 0; j < n1; ++j) {
    std::byte* t = to + j * ts1;
    const std::byte* f = from + j * 16;
    if ((j & 3) == 0) fetch_next_lines(f, fs, n0);
    for (index_t i = 0; i < n0; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + i * fs));
      if constexpr (Stream) _mm_stream_si128(reinterpret_cast<__m128i*>(t + i * 16), v);
      else _mm_storeu_si128(reinterpret_cast<__m128i*>(t + i * 16), v);
    }
  }
  return true;
}

// The kernel for elements of `row` bytes (4, 8, 16), false where none applies
// (nothing written).
template <bool Stream>
inline bool transpose_block(std::byte* to, index_t ts1, const std::byte* from, index_t fs, index_t n0, index_t n1,
                            index_t row) {
  switch (row) {
    case 4: return n0 > 3 && n1 > 3 && transpose4<Stream>(to, ts1, from, fs, n0, n1);
    case 8: return n0 > 1 && n1 > 1 && transpose8<Stream>(to, ts1, from, fs, n0, n1);
    case 16: return n0 > 1 && n1 > 1 && transpose16<Stream>(to, ts1, from, fs, n0, n1);
    default: return false;
  }
}
#else
template <bool Stream>
inline bool transpose_block(std::byte*, index_t, const std::byte*, index_t, index_t, index_t, index_t) {
  return false;
}
#endif

// The first dimension of a box of `shape` outside its leading contiguous run of
// `run` elements (a product of leading extents): the rows of the box are walked
// over the dimensions from there on.
inline int first_dim_outside(const Coord& shape, index_t run) {
  if (shape.ndim() && run < shape[0]) return 0;  // a row of one element (a permuted side: Region::axes)
  int d = 1;
  for (index_t merged = shape[0]; d < shape.ndim() && merged < run; ++d) merged *= shape[d];
  return d;
}

// A run (Segment/LocalCopy): a box repeated count[0] x count[1] times, with
// element steps between repetitions on each side. RunRows says how the kernel
// copies it: `rows` rows of `row` contiguous elements. Repetitions whose box is
// contiguous on both sides and that follow one another on both sides merge into
// longer rows (a cyclic sender's elements are adjacent in its storage: one row).
struct RunRows {
  index_t row = 0;      // elements per row
  index_t rows = 0;     // rows in all
  int merged = 0;       // repetition levels merged into the row (0, 1 or 2)
};
inline RunRows run_rows(const Coord& shape, index_t run, const std::array<index_t, 2>& count,
                        const std::array<index_t, 2>& fstep, const std::array<index_t, 2>& tstep) {
  const index_t vol = shape.volume();
  RunRows r{run, vol / (run > 0 ? run : 1) * count[0] * count[1], 0};
  if (run != vol) return r;
  index_t len = vol;
  for (int k = 0; k < 2; ++k) {
    if (count[k] > 1 && (fstep[k] != len || tstep[k] != len)) break;
    len *= count[k];
    r.merged = k + 1;
  }
  r.row = len;
  r.rows = vol * count[0] * count[1] / len;
  return r;
}

// Copies n1 x n0 rows of B bytes: row (i, j) at i * step0 + j * step1 (B a
// small constant: the compiler turns each memcpy into a few loads and stores,
// no call). Two loops, not one, so that a short inner loop (a cyclic piece of
// two elements per period) costs no odometer step per period.
template <size_t B>
inline void copy_small_rows(std::byte* to, index_t ts0, index_t ts1, const std::byte* from, index_t fs0, index_t fs1,
                            index_t n0, index_t n1) {
  for (index_t j = 0; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) std::memcpy(to + j * ts1 + i * ts0, from + j * fs1 + i * fs0, B);
}

// Copies n1 x n0 rows of `row` bytes with constant byte steps (see copy_small_rows).
inline void copy_rows(std::byte* to, index_t ts0, index_t ts1, const std::byte* from, index_t fs0, index_t fs1,
                      index_t n0, index_t n1, index_t row, bool stream) {
  // A transposed block (walk_run's cross blocks: the target contiguous inside,
  // the source across), streamed where the phase streams and its rows are long
  // enough.
  if (ts0 == row && fs1 == row &&
      (stream && n0 * row >= kStreamRowMin ? transpose_block<true>(to, ts1, from, fs0, n0, n1, row)
                                           : !stream && transpose_block<false>(to, ts1, from, fs0, n0, n1, row)))
    return;
  // Short rows that follow one another in the target (a column gathered from
  // rows at gaps: issue 14's case d unpacked and copied locally, 80-byte rows into
  // 8 KB columns) stream as one chain (copy_row_chained): whole lines leave the
  // core without being read first; single elements of 8 bytes two at a time
  // (gather_stream8).
  if (stream && ts0 == row && row < kStreamRowMin && row % 8 == 0 && n0 * row >= kStreamRowMin) {
    for (index_t j = 0; j < n1; ++j) {
      if (row == 8 && gather_stream8(to + j * ts1, from + j * fs1, fs0, n0)) continue;
      for (index_t i = 0; i < n0; ++i)
        copy_row_chained(to + j * ts1 + i * ts0, from + j * fs1 + i * fs0, static_cast<size_t>(row));
    }
    return;
  }
  if (stream && ts0 == 4 && row == 4 && n0 * row >= kStreamRowMin) {
    bool done = true;
    for (index_t j = 0; j < n1; ++j) done = gather_stream4(to + j * ts1, from + j * fs1, fs0, n0) && done;
    if (done) return;  // else (`to` not a multiple of 4: nothing written) the plain stores below
  }
  switch (row) {
    case 1: return copy_small_rows<1>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 2: return copy_small_rows<2>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 4: return copy_small_rows<4>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 8: return copy_small_rows<8>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 12: return copy_small_rows<12>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 16: return copy_small_rows<16>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 24: return copy_small_rows<24>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 32: return copy_small_rows<32>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 48: return copy_small_rows<48>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    case 64: return copy_small_rows<64>(to, ts0, ts1, from, fs0, fs1, n0, n1);
    default:
      for (index_t j = 0; j < n1; ++j)
        for (index_t i = 0; i < n0; ++i)
          copy_row(to + j * ts1 + i * ts0, from + j * fs1 + i * fs0, static_cast<size_t>(row), stream);
  }
}
// One loop of n rows.
inline void copy_rows(std::byte* to, index_t ts, const std::byte* from, index_t fs, index_t n, index_t row,
                      bool stream) {
  copy_rows(to, ts, 0, from, fs, 0, n, 1, row, stream);
}

inline index_t absolute(index_t v) { return v < 0 ? -v : v; }

// How walk_run walks a run: m loops, ext[0] the innermost and ext[1] the next
// (the rows callback runs both, in blocks of b1 x b0 where `cross`), byte steps
// fb (source) and tb (target); `row` bytes contiguous on both sides (rr: the
// run's rows, run_rows).
struct Loops {
  RunRows rr;
  index_t ext[kMaxDims + 2], fb[kMaxDims + 2], tb[kMaxDims + 2];
  int m = 0;
  index_t row = 0, b0 = 0, b1 = 0;
  bool cross = false;  // a transpose's pair of loops, walked in blocks
};
inline Loops loops_of(const Coord& shape, index_t run, index_t es, const std::array<index_t, 2>& count,
                      const Coord& fs, const std::array<index_t, 2>& fstep, const Coord& ts,
                      const std::array<index_t, 2>& tstep) {
  Loops l;
  const RunRows& rr = l.rr = run_rows(shape, run, count, fstep, tstep);
  l.row = rr.row * es;
  index_t* ext = l.ext;
  index_t* fb = l.fb;
  index_t* tb = l.tb;
  int& m = l.m;
  auto add = [&](index_t e, index_t f, index_t t) {
    if (e > 1) ext[m] = e, fb[m] = f * es, tb[m] = t * es, ++m;
  };
  if (rr.merged == 0)
    for (int d = first_dim_outside(shape, rr.row); d < shape.ndim(); ++d) add(shape[d], fs[d], ts[d]);
  for (int k = rr.merged; k < 2; ++k) add(count[k], fstep[k], tstep[k]);
  if (m == 0) return l;
  // The level with the smallest byte steps (both sides together) runs innermost,
  // the others outward by step: a cyclic piece repeated every few elements down a
  // column is walked down the column, not across columns 8 KB apart, and a box of
  // 2x2 elements repeated 80 times is 2 loops of 80 rows, not 160 loops of 2.
  for (int i = 1; i < m; ++i)
    for (int j = i; j > 0 && absolute(fb[j]) + absolute(tb[j]) < absolute(fb[j - 1]) + absolute(tb[j - 1]); --j)
      std::swap(ext[j], ext[j - 1]), std::swap(fb[j], fb[j - 1]), std::swap(tb[j], tb[j - 1]);
  // ext[0] is the innermost loop, ext[1] the next (rows runs both); an odometer
  // over the others.
  if (m == 1) ext[1] = 1, fb[1] = tb[1] = 0, m = 2;
  // A transpose: the two inner loops each contiguous on one side only (a
  // permuted region's box). Walked whole, one side's rows span the box: a
  // column of 8000 elements read across 8000 lines, none reused before they
  // leave the caches (8000^2 on one rank, one box: 4.7x slower than in tiles of
  // 32). So in blocks of b1 x b0 elements, the target's contiguous loop inside
  // (its rows gathered into whole streamed stores, copy_rows), b0 rows of at
  // least kStreamRowMin bytes on the target, b1 = 32 lines of the other side.
  const index_t row = l.row;
  l.cross = ext[0] > 1 && ext[1] > 1 &&
            ((tb[0] == row && fb[1] == row && absolute(fb[0]) != row) ||
             (fb[0] == row && tb[1] == row && absolute(tb[0]) != row));
  if (l.cross && tb[1] == row) std::swap(ext[0], ext[1]), std::swap(fb[0], fb[1]), std::swap(tb[0], tb[1]);
  l.b0 = l.cross ? std::max<index_t>(32, kStreamRowMin / row) : ext[0];
  l.b1 = l.cross ? 32 : ext[1];
  return l;
}

// Walks a run (see RunRows) of elements of `es` bytes. Strides and steps are in
// elements (dimension 0 contiguous unless a permuted side gives it a stride).
// `run`: the elements of one box's leading run contiguous on both sides
// (Segment::run / LocalCopy::run, computed by the planner), one row, so a whole
// tile-sized segment is one row. The rows are walked as one strided loop nest
// over the box's dimensions outside the contiguous row and the repetition levels
// not merged into it (loops_of); the two innermost loops go to
// rows(to, ts0, ts1, from, fs0, fs1, n0, n1, row_bytes) (copy_rows' arguments).
template <class Rows>
inline void walk_run(const Coord& shape, index_t run, index_t es, const std::array<index_t, 2>& count,
                     const std::byte* from, const Coord& fs, const std::array<index_t, 2>& fstep, std::byte* to,
                     const Coord& ts, const std::array<index_t, 2>& tstep, Rows&& rows) {
  const Loops l = loops_of(shape, run, es, count, fs, fstep, ts, tstep);
  const index_t row = l.row;
  if (l.m == 0) return rows(to, 0, 0, from, 0, 0, 1, 1, row);
  const int m = l.m;
  const index_t *ext = l.ext, *fb = l.fb, *tb = l.tb;
  const index_t b0 = l.b0, b1 = l.b1;
  index_t idx[kMaxDims + 2] = {};
  while (true) {
    index_t fo = 0, to_ = 0;
    for (int e = 2; e < m; ++e) fo += idx[e] * fb[e], to_ += idx[e] * tb[e];
    for (index_t j = 0; j < ext[1]; j += b1)
      for (index_t i = 0; i < ext[0]; i += b0)
        rows(to + to_ + i * tb[0] + j * tb[1], tb[0], tb[1], from + fo + i * fb[0] + j * fb[1], fb[0], fb[1],
             std::min(b0, ext[0] - i), std::min(b1, ext[1] - j), row);
    int e = 2;
    for (; e < m; ++e) {
      if (++idx[e] < ext[e]) break;
      idx[e] = 0;
    }
    if (e >= m) return;
  }
}

// Calls f(from, to, bytes) for every contiguous row of a run as walk_run walks
// it, `from` and `to` byte offsets of the row (from_off and to_off: the run's
// first elements), without touching memory: the rows of a copy listed ahead of
// it (shm's sorted walk, the rings' source order).
template <class F>
inline void for_each_row(const Coord& shape, index_t run, index_t es, const std::array<index_t, 2>& count,
                         index_t from_off, const Coord& fs, const std::array<index_t, 2>& fstep, index_t to_off,
                         const Coord& ts, const std::array<index_t, 2>& tstep, F&& f) {
  const auto* base = reinterpret_cast<const std::byte*>(std::uintptr_t{1} << 44);  // a stand-in, never dereferenced
  auto* tbase = const_cast<std::byte*>(base);
  walk_run(shape, run, es, count, base + from_off * es, fs, fstep, tbase + to_off * es, ts, tstep,
           [&](std::byte* t, index_t ts0, index_t ts1, const std::byte* from, index_t fs0, index_t fs1, index_t n0,
               index_t n1, index_t row) {
             for (index_t j = 0; j < n1; ++j)
               for (index_t i = 0; i < n0; ++i) f(from - base + j * fs1 + i * fs0, t - base + j * ts1 + i * ts0, row);
           });
}

// Copies a run (walk_run) with copy_rows. `stream`: see kStreamAbove (the caller fences).
inline void copy_run(const Coord& shape, index_t run, index_t es, const std::array<index_t, 2>& count,
                     const std::byte* from, const Coord& fs, const std::array<index_t, 2>& fstep, std::byte* to,
                     const Coord& ts, const std::array<index_t, 2>& tstep, bool stream = false) {
  walk_run(shape, run, es, count, from, fs, fstep, to, ts, tstep,
           [stream](std::byte* t, index_t ts0, index_t ts1, const std::byte* f, index_t fs0, index_t fs1, index_t n0,
                    index_t n1, index_t row) {
             if (n0 == 1 && n1 == 1) return copy_row(t, f, static_cast<size_t>(row), stream);
             copy_rows(t, ts0, ts1, f, fs0, fs1, n0, n1, row, stream);
           });
}

// Strides of a column-major packed box.
inline Coord packed_strides(const Coord& shape) {
  Coord s(shape.ndim());
  index_t st = 1;
  for (int d = 0; d < shape.ndim(); ++d) s[d] = st, st *= shape[d];
  return s;
}

// Repetition steps of a run in a packed buffer: its segments follow one another.
inline std::array<index_t, 2> packed_steps(const Coord& shape, const std::array<index_t, 2>& count) {
  const index_t vol = shape.volume();
  return {vol, vol * count[0]};
}

}  // namespace redist::detail
