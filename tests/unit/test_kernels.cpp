// Copy kernels (src/kernels/copy.hpp) against plain byte loops.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/copy.hpp"

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
