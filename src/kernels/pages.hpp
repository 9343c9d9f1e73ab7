// Faulting in fresh memory before it is written. Layer `kernels`: no redist
// dependency at all.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace redist::detail {

// The kernel's page size (4 KiB here; 16 or 64 KiB on some aarch64 and ppc64le
// kernels, where madvise refuses a start that is not a multiple of it).
inline std::uintptr_t page_bytes() {
  static const std::uintptr_t bytes = [] {
    const long b = sysconf(_SC_PAGESIZE);
    return b > 0 ? static_cast<std::uintptr_t>(b) : std::uintptr_t{4096};
  }();
  return bytes;
}

// The fallback: a zero written at the first byte of each page inside the range.
inline void touch_pages(std::byte* p, std::size_t bytes) {
  const auto base = reinterpret_cast<std::uintptr_t>(p), page = page_bytes();
  for (std::size_t x = 0; x < bytes; x = (base + x) / page * page + page - base) p[x] = std::byte{0};
}

// Faults in the pages of [p, p + bytes) for writing, their contents unchanged:
// madvise(MADV_POPULATE_WRITE) (Linux 5.14) on the pages the range touches, the
// kernel's own loop over them; where the kernel refuses it, touch_pages (call it
// on memory whose contents do not matter yet). The kernel's loop saves the trap
// per page: 79 MB faulted in 24-26 ms against 38-42 ms written (a throwaway
// program on this VM, 4 rounds, docs/apps.md "Faults by the kernel's loop").
inline void populate_for_write(std::byte* p, std::size_t bytes) {
  if (bytes == 0) return;
#ifdef MADV_POPULATE_WRITE
  const auto page = page_bytes();
  const auto first = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto last = (reinterpret_cast<std::uintptr_t>(p) + bytes + page - 1) / page * page;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE) == 0) return;
#endif
  touch_pages(p, bytes);
}

}  // namespace redist::detail
