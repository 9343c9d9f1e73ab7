// Copy kernels (src/kernels/copy.hpp) against plain byte loops; page faulting
// (src/kernels/pages.hpp) by residency.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include <sys/mman.h>

#include "kernels/copy.hpp"
#include "kernels/pages.hpp"

using namespace redist;

// copy_row writes exactly its row, streamed or not, at every alignment of the
// target (streaming stores on whole lines, ordinary ones at the ends), from rows
// shorter than kStreamRowMin to several pages, and nothing beside it.
TEST(Kernels, CopyRowAtEveryAlignment) {
  std::mt19937_64 rng(7);
  for (int c = 0; c < 4000; ++c) {
    const size_t n = c < 600 ? static_cast<size_t>(c) : std::uniform_int_distribution<size_t>(1, 20000)(rng);
    const size_t skew = rng() % 64, fskew = rng() % 64, guard = 128;
    std::vector<std::byte> from(n + 64);
    for (std::byte& b : from) b = static_cast<std::byte>(rng());
    std::vector<std::byte> got(n + 2 * guard + 64, std::byte{0x5a}), want = got;
    for (size_t i = 0; i < n; ++i) want[guard + skew + i] = from[fskew + i];
    detail::copy_row(got.data() + guard + skew, from.data() + fskew, n, c % 2 == 0);
    detail::stream_fence();
    ASSERT_EQ(got, want) << "bytes " << n << " skew " << skew << " source skew " << fskew << " stream " << (c % 2 == 0);
  }
}

// copy_row_chained streams every byte of its row when the target and the length
// are multiples of 8 (8-byte stores at the ends, 16-byte ones between), takes
// copy_row otherwise, and writes nothing beside its row in either case.
TEST(Kernels, CopyRowChainedAtEveryAlignment) {
  std::mt19937_64 rng(11);
  for (int c = 0; c < 4000; ++c) {
    size_t n = c < 600 ? static_cast<size_t>(c) : std::uniform_int_distribution<size_t>(1, 20000)(rng);
    size_t skew = rng() % 64;
    if (c % 4 != 3) n &= ~size_t{7}, skew &= ~size_t{7};  // mostly the streamed case
    const size_t fskew = rng() % 64, guard = 128;
    std::vector<std::byte> from(n + 64);
    for (std::byte& b : from) b = static_cast<std::byte>(rng());
    std::vector<std::byte> got(n + 2 * guard + 64, std::byte{0x5a}), want = got;
    for (size_t i = 0; i < n; ++i) want[guard + skew + i] = from[fskew + i];
    detail::copy_row_chained(got.data() + guard + skew, from.data() + fskew, n);
    detail::stream_fence();
    ASSERT_EQ(got, want) << "bytes " << n << " skew " << skew << " source skew " << fskew;
  }
}

// A chain as shm's push writes it (case d): rows of a few elements going to two
// targets in turn, each continuing its target's last row, reassemble both targets.
TEST(Kernels, ChainedRowsIntoTwoTargets) {
  std::mt19937_64 rng(12);
  const size_t n = 1 << 16;
  std::vector<std::byte> from(2 * n);
  for (std::byte& b : from) b = static_cast<std::byte>(rng());
  std::vector<std::byte> got[2] = {std::vector<std::byte>(n + 16, std::byte{0}), std::vector<std::byte>(n + 16, std::byte{0})};
  std::vector<std::byte> want[2] = {got[0], got[1]};
  size_t at[2] = {8, 8}, f = 0;  // targets from byte 8: the first row starts mid-line
  for (int t = 0; f < from.size(); t ^= 1) {
    const size_t row = std::min<size_t>(8 * (1 + rng() % 20), std::min(from.size() - f, n + 8 - at[t]));
    if (row == 0) break;
    std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(f), row, want[t].begin() + static_cast<std::ptrdiff_t>(at[t]));
    detail::copy_row_chained(got[t].data() + at[t], from.data() + f, row);
    at[t] += row, f += row;
  }
  detail::stream_fence();
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
}

// copy_rows streamed, rows adjacent in the target and at gaps in the source (a
// column gathered: issue 14's case d, 80-byte rows), rows of 4 to 264 bytes,
// targets at every 8-byte skew and some odd ones (the chained stores need
// multiples of 8; the others take copy_row): every target byte, nothing beside
// the rows written.
TEST(Kernels, RowsAdjacentInTheTargetStreamAsAChain) {
  std::mt19937_64 rng(13);
  for (int c = 0; c < 600; ++c) {
    const index_t row = c < 40 ? 4 + 8 * (c % 33) : static_cast<index_t>(4 * (1 + rng() % 66));
    const index_t n0 = 1 + static_cast<index_t>(rng() % 70), n1 = 1 + static_cast<index_t>(rng() % 4);
    const index_t gap = static_cast<index_t>(rng() % 3) * 8, fs0 = row + gap, fs1 = n0 * fs0 + 24;
    const index_t ts1 = n0 * row + 8 * static_cast<index_t>(rng() % 3);  // the next column, maybe beyond a gap
    const size_t skew = c % 5 == 4 ? rng() % 64 : 8 * (rng() % 8), guard = 128;
    std::vector<std::byte> from(static_cast<size_t>(n1 * fs1 + 64));
    for (std::byte& b : from) b = static_cast<std::byte>(rng());
    std::vector<std::byte> got(static_cast<size_t>(n1 * ts1) + 2 * guard + 64, std::byte{0x5a}), want = got;
    for (index_t j = 0; j < n1; ++j)
      for (index_t i = 0; i < n0; ++i)
        for (index_t b = 0; b < row; ++b)
          want[guard + skew + static_cast<size_t>(j * ts1 + i * row + b)] = from[static_cast<size_t>(j * fs1 + i * fs0 + b)];
    detail::copy_rows(got.data() + guard + skew, row, ts1, from.data(), fs0, fs1, n0, n1, row, true);
    detail::stream_fence();
    ASSERT_EQ(got, want) << "row " << row << " n0 " << n0 << " n1 " << n1 << " gap " << gap << " skew " << skew;
  }
}

// gather_stream8 and gather_stream4 (through copy_rows streamed): single 8- and
// 4-byte elements at gaps in the source gathered into 16-byte streaming stores,
// targets at every element skew (first elements alone to reach a 16-byte
// boundary), odd counts, columns whose next one starts off the boundary, and odd
// skews (not a multiple of the element: the fallbacks): every target byte, nothing
// beside written.
TEST(Kernels, EightByteElementsGatherTwoByTwo) {
  std::mt19937_64 rng(29);
  for (int c = 0; c < 800; ++c) {
    const index_t es = c < 400 ? 8 : 4;  // gather_stream4 (floats) from c = 400 on
    const index_t n0 = 64 + static_cast<index_t>(rng() % 90), n1 = 1 + static_cast<index_t>(rng() % 4);
    const index_t fs0 = es * (1 + static_cast<index_t>(rng() % 4)), fs1 = n0 * fs0 + es * static_cast<index_t>(rng() % 3);
    const index_t ts1 = n0 * es + es * static_cast<index_t>(rng() % 3);
    const size_t skew = c % 7 == 6 ? 1 + rng() % 3 : static_cast<size_t>(es) * (rng() % 8), guard = 64;
    std::vector<std::byte> from(static_cast<size_t>(n1 * fs1 + 64));
    for (std::byte& b : from) b = static_cast<std::byte>(rng());
    std::vector<std::byte> got(static_cast<size_t>(n1 * ts1) + 2 * guard + 64, std::byte{0x5a}), want = got;
    for (index_t j = 0; j < n1; ++j)
      for (index_t i = 0; i < n0; ++i)
        for (index_t b = 0; b < es; ++b)
          want[guard + skew + static_cast<size_t>(j * ts1 + i * es + b)] = from[static_cast<size_t>(j * fs1 + i * fs0 + b)];
    detail::copy_rows(got.data() + guard + skew, es, ts1, from.data(), fs0, fs1, n0, n1, es, true);
    detail::stream_fence();
    ASSERT_EQ(got, want) << "es " << es << " n0 " << n0 << " n1 " << n1 << " fs0 " << fs0 << " skew " << skew;
  }
}

// copy_rows, not streamed, rows of every size from 1 to 300 bytes at gaps on both
// sides: the fixed sizes (copy_small_rows) and copy_row for the others. Every
// target byte, nothing beside the rows written.
TEST(Kernels, RowsOfEverySizeAtGaps) {
  std::mt19937_64 rng(17);
  for (index_t row = 1; row <= 300; ++row) {
    const index_t n0 = 1 + static_cast<index_t>(rng() % 9), n1 = 1 + static_cast<index_t>(rng() % 3);
    const index_t fs0 = row + static_cast<index_t>(rng() % 9), fs1 = n0 * fs0 + static_cast<index_t>(rng() % 5);
    const index_t ts0 = row + 1 + static_cast<index_t>(rng() % 9), ts1 = n0 * ts0 + static_cast<index_t>(rng() % 5);
    const size_t guard = 64;
    std::vector<std::byte> from(static_cast<size_t>(n1 * fs1));
    for (std::byte& b : from) b = static_cast<std::byte>(rng());
    std::vector<std::byte> got(static_cast<size_t>(n1 * ts1) + 2 * guard, std::byte{0x5a}), want = got;
    for (index_t j = 0; j < n1; ++j)
      for (index_t i = 0; i < n0; ++i)
        for (index_t b = 0; b < row; ++b)
          want[guard + static_cast<size_t>(j * ts1 + i * ts0 + b)] = from[static_cast<size_t>(j * fs1 + i * fs0 + b)];
    detail::copy_rows(got.data() + guard, ts0, ts1, from.data(), fs0, fs1, n0, n1, row, false);
    ASSERT_EQ(got, want) << "row " << row << " n0 " << n0 << " n1 " << n1;
  }
}

// A transposed box (a permuted region's segment: the source's dimension 0 at a
// stride) copied by copy_run in blocks (walk_run's transposes): every element
// where a plain loop puts it, for sizes below, at and across the blocks (32 x
// 32 for 8-byte elements, 64 x 32 for 4-byte ones), both ways round (the target
// or the source contiguous along the inner loop), with repetitions, streamed or
// not, the target on or one element off a 16-byte boundary and leading
// dimensions odd and even (transpose8's, transpose4's and transpose16's
// paths), and nothing beside the box written.
TEST(Kernels, TransposedBoxesCopyInBlocks) {
  std::mt19937_64 rng(29);
  for (const index_t es : {index_t{8}, index_t{4}, index_t{16}, index_t{1}, index_t{12}})
    for (const auto& [r, c] : {std::pair<index_t, index_t>{31, 33}, {32, 32}, {65, 7}, {100, 129}, {1, 70}, {70, 1}})
      for (const bool source_permuted : {true, false})
        for (const bool stream : {false, true})
          for (const index_t shift : {0, 1}) {  // the target one element off a 16-byte boundary
          // The box r x c in the target's order; the target column-major (ld r + 3),
          // the source its transpose (ld c + 5); two repetitions across the target's columns.
          const index_t tld = r + 3, sld = c + 5, reps = 2;
          Coord shape{r, c}, ts{1, tld}, fs{sld, 1};
          if (!source_permuted) std::swap(ts, fs);  // the source contiguous inside, the target at a stride
          const auto span = [&](const Coord& st) { return 1 + (r - 1) * st[0] + (c - 1) * st[1]; };  // one repetition
          const index_t tspan = span(ts), fspan = span(fs);
          const std::array<index_t, 2> count{reps, 1}, tstep{tspan + 7, 0}, fstep{fspan + 2, 0};
          const size_t guard = 64;
          std::vector<std::byte> from(static_cast<size_t>((fstep[0] * reps + fspan) * es));
          for (std::byte& b : from) b = static_cast<std::byte>(rng());
          std::vector<std::byte> got(static_cast<size_t>((tstep[0] * reps + tspan) * es) + 2 * guard, std::byte{0x5a});
          std::vector<std::byte> want = got;
          for (index_t k = 0; k < reps; ++k)
            for (index_t j = 0; j < c; ++j)
              for (index_t i = 0; i < r; ++i)
                for (index_t b = 0; b < es; ++b)
                  want[guard + static_cast<size_t>((k * tstep[0] + i * ts[0] + j * ts[1]) * es + b)] =
                      from[static_cast<size_t>((k * fstep[0] + i * fs[0] + j * fs[1]) * es + b)];
          std::vector<std::byte> out(got.size() + 16, std::byte{0x5a}), expect = out;
          // (16-byte elements 8 bytes off, as a complex double may lie)
          const size_t off = static_cast<size_t>(shift * (es == 16 ? 8 : es));
          std::copy(want.begin(), want.end(), expect.begin() + static_cast<std::ptrdiff_t>(off));
          detail::copy_run(shape, 1, es, count, from.data(), fs, fstep, out.data() + guard + off, ts, tstep, stream);
          if (stream) detail::stream_fence();
          ASSERT_EQ(out, expect) << "es " << es << " box " << r << "x" << c << (source_permuted ? " source" : " target")
                                 << " permuted" << (stream ? ", streamed" : "") << ", shifted " << shift;
        }
}

// populate_for_write (and its fallback, touch_pages) faults in exactly the pages
// its range touches, from a range starting and ending inside a page, and keeps the
// contents where the kernel's loop does it. mincore says which pages are resident.
TEST(Kernels, PopulateFaultsTheRangesPages) {
  const std::size_t kPage = detail::page_bytes(), kPages = 64;
  for (int fallback = 0; fallback < 2; ++fallback) {
    void* m = mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    madvise(m, kPages * kPage, MADV_NOHUGEPAGE);  // one fault, one page (no transparent huge pages)
    auto* p = static_cast<std::byte*>(m);
    p[40 * kPage + 7] = std::byte{0x42};  // page 40 resident, holding data
    // Bytes [100 + 3 pages, 100 + 13 pages): pages 3 to 13.
    if (fallback)
      detail::touch_pages(p + 3 * kPage + 100, 10 * kPage);
    else
      detail::populate_for_write(p + 3 * kPage + 100, 10 * kPage);
    detail::populate_for_write(p + 40 * kPage + 5, 10);  // a resident page: its data kept
    std::vector<unsigned char> resident(kPages);
    ASSERT_EQ(mincore(m, kPages * kPage, resident.data()), 0);
    for (std::size_t i = 0; i < kPages; ++i)
      EXPECT_EQ(resident[i] & 1, (i >= 3 && i <= 13) || i == 40 ? 1 : 0) << "page " << i << " fallback " << fallback;
    EXPECT_EQ(p[40 * kPage + 7], std::byte{0x42});
    munmap(m, kPages * kPage);
  }
}
